package tools

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// capWriter keeps the first max characters written to it, and counts all of
// them: a command's output of any size costs at most about 4*max bytes.
// It is safe for concurrent use.
type capWriter struct {
	mu    sync.Mutex
	max   int    // characters kept
	buf   []byte // at most max characters, and up to utf8.UTFMax-1 bytes of a split one
	chars int    // characters written in all
	lines int    // newlines written in all
	last  byte   // the last byte written
}

func newCapWriter(max int) *capWriter { return &capWriter{max: max} }

func (w *capWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range p {
		if b&0xC0 != 0x80 { // not a UTF-8 continuation byte: a new character
			w.chars++
		}
		if b == '\n' {
			w.lines++
		}
	}
	if len(p) > 0 {
		w.last = p[len(p)-1]
	}
	if room := w.max*utf8.UTFMax - len(w.buf); room > 0 {
		w.buf = append(w.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// String returns the output, cut to max characters with a notice saying how
// much was left out when it did not fit.
func (w *capWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.chars <= w.max {
		return string(w.buf)
	}
	kept := cutRunes(string(w.buf), w.max)
	lines := w.lines - strings.Count(kept, "\n") // lines ended in the part left out
	if w.last != '\n' {
		lines++ // and the last one, unended
	}
	return strings.TrimSuffix(kept, "\n") + cutNotice(w.max, w.chars-w.max, lines)
}

// capText cuts s to max characters as capWriter does.
func capText(s string, max int) string {
	w := newCapWriter(max)
	_, _ = w.Write([]byte(s))
	return w.String()
}

// cutNotice is the line that ends an output cut at max characters: Claude
// Code's "... [N lines truncated] ..." marker, then how many characters
// were left out.
func cutNotice(max, charsLeft, lines int) string {
	return fmt.Sprintf("\n\n... [%d lines truncated] ...\n(output cut at %d characters: %d more characters were left out)", lines, max, charsLeft)
}
