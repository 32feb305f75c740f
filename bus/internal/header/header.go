// Package header holds what hookbus' bus packages do with NATS headers:
// text made to fit a header value, a case-insensitive look-up, and the size
// NATS counts against max_payload.
package header

import (
	"strings"

	"github.com/nats-io/nats.go"
)

// OneLine makes s fit in a header value: no line breaks, at most n bytes.
func OneLine(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, s)
	if len(s) > n {
		s = s[:n]
	}
	return s
}

// Value looks key up exactly, then without regard to case (services in
// other languages may write nats-service-error).
func Value(h nats.Header, key string) (string, bool) {
	if v, ok := h[key]; ok && len(v) > 0 {
		return v[0], true
	}
	for k, v := range h {
		if len(v) > 0 && strings.EqualFold(k, key) {
			return v[0], true
		}
	}
	return "", false
}

// MsgSize is the size NATS counts against max_payload: the encoded headers
// and the body (values are counted untrimmed: never less than NATS counts).
func MsgSize(h nats.Header, body int) int {
	if len(h) == 0 {
		return body
	}
	n := body + len("NATS/1.0\r\n\r\n")
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + len(v) + len(": \r\n")
		}
	}
	return n
}
