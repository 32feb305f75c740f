package events

import "encoding/binary"

// ValidJSON reports whether b is one valid JSON value, with exactly the
// semantics of encoding/json.Valid (RFC 8259, no UTF-8 check inside
// strings, nesting up to 10000), several times faster on the string-heavy
// payloads of agent loops. Event.Validate checks data with it.
// FuzzValidJSON holds it to json.Valid.
func ValidJSON(b []byte) bool {
	i := skipSpace(b, 0)
	var stack []byte // '{' or '[' per open container
	var small [32]byte
	stack = small[:0]
value:
	if i >= len(b) {
		return false
	}
	switch c := b[i]; {
	case c == '{':
		if len(stack) >= maxNesting {
			return false
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == '}' {
			i++
			goto end
		}
		stack = append(stack, '{')
		goto key
	case c == '[':
		if len(stack) >= maxNesting {
			return false
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			i++
			goto end
		}
		stack = append(stack, '[')
		goto value
	case c == '"':
		var ok bool
		if i, ok = scanString(b, i+1); !ok {
			return false
		}
	case c == '-' || ('0' <= c && c <= '9'):
		var ok bool
		if i, ok = scanNumber(b, i); !ok {
			return false
		}
	case c == 't':
		if !hasLiteral(b, i, "true") {
			return false
		}
		i += 4
	case c == 'f':
		if !hasLiteral(b, i, "false") {
			return false
		}
		i += 5
	case c == 'n':
		if !hasLiteral(b, i, "null") {
			return false
		}
		i += 4
	default:
		return false
	}
end: // a value ended at i: close containers or go on to the next element
	i = skipSpace(b, i)
	if len(stack) == 0 {
		return i == len(b)
	}
	if i >= len(b) {
		return false
	}
	switch top := stack[len(stack)-1]; {
	case b[i] == ',':
		i = skipSpace(b, i+1)
		if top == '{' {
			goto key
		}
		goto value
	case top == '{' && b[i] == '}', top == '[' && b[i] == ']':
		stack = stack[:len(stack)-1]
		i++
		goto end
	}
	return false
key: // i is at an object key (after '{' or ',' and spaces)
	if i >= len(b) || b[i] != '"' {
		return false
	}
	{
		var ok bool
		if i, ok = scanString(b, i+1); !ok {
			return false
		}
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return false
	}
	i = skipSpace(b, i+1)
	goto value
}

// maxNesting is encoding/json's maximum nesting depth.
const maxNesting = 10000

// strPlain marks the bytes a JSON string holds as they are.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanString scans a string body from i (after the opening quote) and
// returns the index after the closing quote.
func scanString(b []byte, i int) (int, bool) {
	for {
		// 8 bytes at a time while none is '"', '\\' or a control byte.
		for i+8 <= len(b) && !special8(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		for i < len(b) && strPlain[b[i]] {
			i++
		}
		if i >= len(b) {
			return i, false
		}
		switch b[i] {
		case '"':
			return i + 1, true
		case '\\':
			if i+1 >= len(b) {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return i, false
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return i, false
					}
				}
				i += 6
			default:
				return i, false
			}
		default: // a control character
			return i, false
		}
	}
}

// special8 reports whether one of the 8 bytes of w is '"', '\\' or below
// 0x20 (exact: the zero-byte and less-than tests below have no false
// positives on the word as a whole).
func special8(w uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	q := w ^ (lo * '"')
	bs := w ^ (lo * '\\')
	return ((w-lo*0x20)&^w|(q-lo)&^q|(bs-lo)&^bs)&hi != 0
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func scanNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = scanDigits(b, i+1)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := scanDigits(b, i+1)
		if j == i+1 {
			return i, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := scanDigits(b, i)
		if j == i {
			return i, false
		}
		i = j
	}
	return i, true
}

func scanDigits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

func hasLiteral(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}
