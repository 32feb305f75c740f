package events

import (
	"fmt"
	"strings"
)

// PercentEncode escapes a header value as the CloudEvents bindings require:
// bytes outside printable ASCII, space, '"' and '%' become %XX. A value with
// none of them is returned as is, without allocating.
func PercentEncode(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if needsEscape(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	return string(appendPercent(make([]byte, 0, len(s)+2*n), s))
}

// appendPercent appends PercentEncode(s) to b.
func appendPercent(b []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if needsEscape(c) {
			b = append(b, '%', hex[c>>4], hex[c&15])
			continue
		}
		b = append(b, c)
	}
	return b
}

func needsEscape(c byte) bool { return c <= 0x20 || c >= 0x7F || c == '"' || c == '%' }

// PercentDecode undoes PercentEncode; a truncated or non-hex escape is an
// error. A value without '%' is returned as is, without allocating.
func PercentDecode(s string) (string, error) {
	if strings.IndexByte(s, '%') < 0 {
		return s, nil
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b = append(b, s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("truncated percent escape in %q", s)
		}
		hi, ok1 := unhex(s[i+1])
		lo, ok2 := unhex(s[i+2])
		if !ok1 || !ok2 {
			return "", fmt.Errorf("bad percent escape %q", s[i:i+3])
		}
		b = append(b, hi<<4|lo)
		i += 2
	}
	return string(b), nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
