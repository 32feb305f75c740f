package policy

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// pos is where an expression's text starts in the file, and how the YAML
// scalar holding it is written, to place a CEL error inside it.
type pos struct {
	line, col int        // of the scalar's first character of text
	style     yaml.Style // quoting
	raw       string     // the scalar's first line as written, from its text
	indent    int        // a block scalar's indentation (its text's column - 1)
}

// posOf is where the expression at path starts in the file, and how the
// scalar holding it is written; the zero pos when p's document holds no
// scalar there.
func (p *Policy) posOf(path string) pos {
	n := p.node(path)
	if n == nil || n.Kind != yaml.ScalarNode {
		return pos{}
	}
	lines := bytes.Split(p.doc.text, []byte("\n"))
	lineText := func(fileLine int) string {
		i := fileLine - p.doc.line
		if i < 0 || i >= len(lines) {
			return ""
		}
		return strings.TrimRight(string(lines[i]), "\r")
	}
	ps := pos{line: n.Line, col: n.Column, style: n.Style}
	switch {
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		// The text starts on the next non-empty line, indented.
		for l := n.Line + 1; l < n.Line+1000; l++ {
			t := lineText(l)
			if strings.TrimSpace(t) == "" {
				if l-p.doc.line >= len(lines) {
					break
				}
				continue
			}
			ps.line, ps.indent = l, len(t)-len(strings.TrimLeft(t, " "))
			ps.col = ps.indent + 1
			break
		}
	default:
		t := lineText(n.Line)
		if n.Column-1 <= len(t) {
			ps.raw = t[n.Column-1:]
		}
		if n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0 {
			ps.col++ // past the quote
			if ps.raw != "" {
				ps.raw = ps.raw[1:]
			}
		}
	}
	return ps
}

// at returns the file position of the expression's character at CEL's
// location (line 1-based, column 0-based in runes of the expression).
func (ps pos) at(line, col int) (int, int) {
	if ps.line == 0 {
		return 1, 1
	}
	line = max(line, 1)
	if ps.style&yaml.LiteralStyle != 0 {
		return ps.line + line - 1, ps.indent + col + 1
	}
	if ps.style&yaml.FoldedStyle != 0 || line > 1 {
		return ps.line + line - 1, ps.col + col // folded or multi-line: close enough
	}
	return ps.line, ps.col + rawOffset(ps.raw, ps.style, col)
}

// rawOffset is how many bytes of raw, a quoted or plain scalar as written,
// hold its first n characters once decoded (” is one quote, \x escapes
// one character).
func rawOffset(raw string, style yaml.Style, n int) int {
	i := 0
	for k := 0; k < n && i < len(raw); k++ {
		switch {
		case style&yaml.SingleQuotedStyle != 0 && strings.HasPrefix(raw[i:], "''"):
			i += 2
		case style&yaml.DoubleQuotedStyle != 0 && raw[i] == '\\' && i+1 < len(raw):
			switch raw[i+1] {
			case 'x':
				i += 4
			case 'u':
				i += 6
			case 'U':
				i += 10
			default:
				i += 2
			}
		default:
			_, size := utf8.DecodeRuneInString(raw[i:])
			i += size
		}
	}
	return i
}
