package policy

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/hookbus/hookbus/events"
)

// readCall reads the tool call of a tool stage's payload ({"call": ...})
// without reflection: one pass over the payload once it is known to be
// valid JSON, the call's strings sliced from one copy of its bytes. ok is
// false for anything it does not read exactly as encoding/json would
// (a key with an escape, a non-ASCII key or one matching a field only
// regardless of case, a repeated or null member, a member of another
// type, a payload that is not valid JSON or not an object); the caller
// then decodes with encoding/json, which FuzzReadCall holds this to.
func readCall(data []byte) (call *events.ToolCall, ok bool) {
	if !events.ValidJSON(data) {
		return nil, false
	}
	r := jsonReader{b: data}
	if !r.next('{') {
		return nil, false
	}
	ok = r.object(payloadFields, func(int) bool {
		call, ok = r.toolCall()
		return ok
	})
	if !ok {
		return nil, false
	}
	return call, true
}

// jsonReader reads a payload known to be valid JSON (events.ValidJSON).
type jsonReader struct {
	b []byte
	i int
}

func (r *jsonReader) space() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// next consumes c, after any space, when it is the next byte.
func (r *jsonReader) next(c byte) bool {
	r.space()
	if r.i < len(r.b) && r.b[r.i] == c {
		r.i++
		return true
	}
	return false
}

// key reads the next member's key of an object and its colon: nil at the
// object's end. ok is false for a key this reader does not take as it is
// (an escape, a byte that is not ASCII).
func (r *jsonReader) key() (key []byte, ok bool) {
	r.next(',')
	if r.next('}') {
		return nil, true
	}
	if !r.next('"') {
		return nil, false
	}
	start := r.i
	for ; r.b[r.i] != '"'; r.i++ {
		if c := r.b[r.i]; c == '\\' || c >= utf8.RuneSelf {
			return nil, false
		}
	}
	key = r.b[start:r.i]
	r.i++
	r.next(':')
	r.space()
	return key, true
}

// value returns the bytes of the next value and moves past it.
func (r *jsonReader) value() []byte {
	r.space()
	start := r.i
	r.skip()
	return r.b[start:r.i]
}

// skip moves past the next value.
func (r *jsonReader) skip() {
	r.space()
	if r.i >= len(r.b) {
		return
	}
	switch r.b[r.i] {
	case '"':
		r.i = stringEnd(r.b, r.i+1)
	case '{', '[':
		depth := 0
		for {
			switch r.b[r.i] {
			case '"':
				r.i = stringEnd(r.b, r.i+1)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			r.i++
			if depth == 0 {
				return
			}
		}
	default: // a number or a literal: up to the next delimiter
		for r.i < len(r.b) {
			switch r.b[r.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return
			}
			r.i++
		}
	}
}

// stringEnd is the index after the closing quote of the string whose body
// starts at i: the first quote not escaped (after an even number of
// backslashes).
func stringEnd(b []byte, i int) int {
	for {
		i += bytes.IndexByte(b[i:], '"')
		n := 0
		for b[i-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return i + 1
		}
		i++
	}
}

// object reads the members of an object whose "{" was read, up to its
// end: member reads the value of each member whose key is one of fields
// (given its index), the others are skipped. It is false for a key this
// reader does not take as it is, one that names a field only regardless
// of case, a field repeated, or a value member does not read.
func (r *jsonReader) object(fields []string, member func(field int) bool) bool {
	var seen uint
	for {
		key, ok := r.key()
		if !ok {
			return false
		}
		if key == nil {
			return true
		}
		f := fieldIndex(key, fields)
		switch {
		case f == foldOnly, f >= 0 && seen&(1<<f) != 0:
			return false
		case f < 0:
			r.skip()
			continue
		}
		seen |= 1 << f
		if !member(f) {
			return false
		}
	}
}

// toolCall reads the call object.
func (r *jsonReader) toolCall() (*events.ToolCall, bool) {
	v := r.value()
	if len(v) == 0 || v[0] != '{' {
		return nil, false // null, or not an object
	}
	// One string for all the call's strings, sliced below.
	s := string(v)
	cr := jsonReader{b: v, i: 1}
	call := &events.ToolCall{}
	ok := cr.object(callFields, func(f int) bool {
		var ok bool
		switch f {
		case 0:
			call.ID, ok = cr.str(s)
		case 1:
			call.Name, ok = cr.str(s)
		case 2:
			a := cr.value()
			if a[0] == 'n' {
				return false // null
			}
			call.Arguments, ok = json.RawMessage(bytes.Clone(a)), true
		case 3:
			call.Action, ok = cr.action(s)
		}
		return ok
	})
	if !ok {
		return nil, false
	}
	return call, true
}

var (
	payloadFields = []string{"call"}
	callFields    = []string{"id", "name", "arguments", "action"}
	actionFields  = []string{"kind", "command", "paths", "url", "query", "server", "mcp_tool"}
)

// foldOnly is fieldIndex's answer for a key that names a field only
// regardless of case.
const foldOnly = -2

// fieldIndex is the index of key in fields, -1 when it names none of
// them, foldOnly when it names one only regardless of case.
func fieldIndex(key []byte, fields []string) int {
	if i := slices.Index(fields, string(key)); i >= 0 {
		return i
	}
	if slices.ContainsFunc(fields, func(f string) bool { return strings.EqualFold(string(key), f) }) {
		return foldOnly
	}
	return -1
}

// str reads a string value; s is the reader's bytes as a string, which a
// string without escapes is sliced from.
func (r *jsonReader) str(s string) (string, bool) {
	v := r.value()
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	body := v[1 : len(v)-1]
	if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		start := r.i - len(v) + 1
		return s[start : start+len(body)], true
	}
	return unquote(body), true
}

// unquote is a JSON string's body with its escapes read, as encoding/json
// reads it: a lone surrogate, or a byte that is not UTF-8, is U+FFFD.
// body is valid JSON (events.ValidJSON).
func unquote(body []byte) string {
	var b strings.Builder
	b.Grow(len(body) + utf8.UTFMax)
	for i := 0; i < len(body); {
		switch c := body[i]; {
		case c == '\\':
			switch e := body[i+1]; e {
			case 'u':
				r := hex4(body[i+2:])
				i += 6
				if utf16.IsSurrogate(r) {
					if i+6 <= len(body) && body[i] == '\\' && body[i+1] == 'u' {
						if d := utf16.DecodeRune(r, hex4(body[i+2:])); d != unicode.ReplacementChar {
							b.WriteRune(d)
							i += 6
							continue
						}
					}
					r = unicode.ReplacementChar
				}
				b.WriteRune(r)
			default:
				b.WriteByte(unescaped[e])
				i += 2
			}
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			i++
		default:
			r, n := utf8.DecodeRune(body[i:])
			b.WriteRune(r)
			i += n
		}
	}
	return b.String()
}

// unescaped is what each one-letter escape stands for.
var unescaped = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// hex4 reads the 4 hex digits of a \u escape.
func hex4(h []byte) rune {
	var r rune
	for _, c := range h[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// action reads the call's action object.
func (r *jsonReader) action(s string) (*events.Action, bool) {
	if !r.next('{') {
		return nil, false // null, or not an object
	}
	x := &events.Action{}
	ok := r.object(actionFields, func(f int) bool {
		if f == 2 {
			var ok bool
			x.Paths, ok = r.strings(s)
			return ok
		}
		str, ok := r.str(s)
		switch f {
		case 0:
			x.Kind = events.ActionKind(str)
		case 1:
			x.Command = str
		case 3:
			x.URL = str
		case 4:
			x.Query = str
		case 5:
			x.Server = str
		case 6:
			x.MCPTool = str
		}
		return ok
	})
	if !ok {
		return nil, false
	}
	return x, true
}

// strings reads a list of strings ([] is an empty list, as encoding/json
// reads it).
func (r *jsonReader) strings(s string) ([]string, bool) {
	if !r.next('[') {
		return nil, false
	}
	out := []string{}
	for {
		r.next(',')
		if r.next(']') {
			return out, true
		}
		str, ok := r.str(s)
		if !ok {
			return nil, false
		}
		out = append(out, str)
	}
}
