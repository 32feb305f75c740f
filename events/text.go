package events

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Text for people: what timelines, trees and the web page print of a
// payload. JSON as a program writes it (encoding/json escapes &, < and > as
// \u0026, \u003c and \u003e; other writers escape every non-ASCII letter)
// is shown here as the text it stands for, and quoted strings keep their
// quotes and backslashes as they are: people read `ls && cat "a b"`, not
// `ls \u0026\u0026 cat \"a b\"`.

// Quote is s for people: on one line (each run of white space one space),
// shortened to max characters with "…" (max <= 0: not shortened), between
// double quotes. Quotes, backslashes and letters of any script are left as
// they are; only characters a terminal would act on (control characters)
// are escaped, as Go writes them (\x1b).
func Quote(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if max > 0 && utf8.RuneCountInString(s) > max {
		s = string([]rune(s)[:max]) + "…"
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		if unicode.IsPrint(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r)
		b.WriteString(q[1 : len(q)-1])
	}
	b.WriteByte('"')
	return b.String()
}

// ReadableJSON is JSON value b on one line for people: compacted, and each
// \uXXXX escape of a printable character (&, <, >, é, ...) written as the
// character itself. Keys keep their order and numbers their digits; the
// result is still valid JSON (quotes, backslashes and control characters
// stay escaped). b is returned as it is when it is not valid JSON.
func ReadableJSON(b []byte) []byte {
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil {
		return b
	}
	in := c.Bytes()
	if !bytes.Contains(in, []byte(`\u`)) {
		return in
	}
	out := make([]byte, 0, len(in))
	inString := false
	for i := 0; i < len(in); i++ {
		ch := in[i]
		switch {
		case !inString:
			inString = ch == '"'
		case ch == '"':
			inString = false
		case ch == '\\':
			if r, n := unescape(in[i:]); n > 0 {
				out = utf8.AppendRune(out, r)
				i += n - 1
				continue
			}
			out = append(out, ch, in[i+1]) // compacted JSON: an escape is never the last byte
			i++
			continue
		}
		out = append(out, ch)
	}
	return out
}

// unescape reads the \uXXXX escape (or surrogate pair) at the start of b:
// the character and the bytes it took, or 0 bytes when it stands for a
// character that must stay escaped in JSON or a terminal.
func unescape(b []byte) (rune, int) {
	r, ok := hex4(b)
	if !ok {
		return 0, 0
	}
	n := 6
	if utf16.IsSurrogate(r) {
		lo, ok := hex4(b[6:])
		if !ok {
			return 0, 0
		}
		if r = utf16.DecodeRune(r, lo); r == unicode.ReplacementChar {
			return 0, 0
		}
		n = 12
	}
	if r == '"' || r == '\\' || !unicode.IsPrint(r) {
		return 0, 0
	}
	return r, n
}

// hex4 reads a \uXXXX escape at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[2:6]), 16, 32)
	if err != nil {
		return 0, false
	}
	return rune(v), true
}

// shorten cuts s to about max bytes on a character boundary, with "…".
func shorten(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max] + "…"
}
