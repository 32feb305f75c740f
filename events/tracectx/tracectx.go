package tracectx

import (
	"encoding/hex"
	"fmt"
)

// TraceID is a W3C trace id: 16 bytes, not all zero.
type TraceID [16]byte

// SpanID is a W3C parent (span) id: 8 bytes, not all zero.
type SpanID [8]byte

// FlagSampled is the sampled bit of the trace flags.
const FlagSampled = 0x01

// Context is one W3C trace context: a trace, a span in it, and the flags.
type Context struct {
	Trace TraceID
	Span  SpanID
	Flags byte
}

// IsValid reports whether the trace and span ids are both non-zero.
func (c Context) IsValid() bool { return c.Trace != TraceID{} && c.Span != SpanID{} }

// String is the traceparent header value, version 00
// ("00-<trace>-<span>-<flags>"); "" for an invalid context.
func (c Context) String() string {
	if !c.IsValid() {
		return ""
	}
	var b [55]byte
	b[0], b[1], b[2] = '0', '0', '-'
	hex.Encode(b[3:35], c.Trace[:])
	b[35] = '-'
	hex.Encode(b[36:52], c.Span[:])
	b[52] = '-'
	hex.Encode(b[53:55], []byte{c.Flags})
	return string(b[:])
}

// Child is the context of span s in c's trace, with c's flags.
func (c Context) Child(s SpanID) Context { return Context{Trace: c.Trace, Span: s, Flags: c.Flags} }

// String is the id in lower-case hex.
func (t TraceID) String() string { return hex.EncodeToString(t[:]) }

// String is the id in lower-case hex.
func (s SpanID) String() string { return hex.EncodeToString(s[:]) }

// Parse reads a traceparent header value. It accepts version 00 exactly
// (55 characters, lower-case hex, non-zero ids) and, as the W3C
// specification asks of a reader, a later version's first four fields. A
// value that does not parse is an error wrapping ErrTraceparent that says
// what is wrong.
func Parse(s string) (Context, error) {
	var c Context
	if len(s) < 55 {
		return c, fmt.Errorf("%w: %q is %d characters (want 55: 00-<32 hex>-<16 hex>-<2 hex>)", ErrTraceparent, s, len(s))
	}
	if s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return c, fmt.Errorf("%w: %q: want version-traceid-parentid-flags separated by '-'", ErrTraceparent, s)
	}
	var ver [1]byte
	if !lowerHex(s[0:2]) || !lowerHex(s[3:35]) || !lowerHex(s[36:52]) || !lowerHex(s[53:55]) {
		return c, fmt.Errorf("%w: %q: the fields are lower-case hex", ErrTraceparent, s)
	}
	hex.Decode(ver[:], []byte(s[0:2]))
	switch {
	case ver[0] == 0xff:
		return c, fmt.Errorf("%w: %q: version ff is invalid", ErrTraceparent, s)
	case ver[0] == 0 && len(s) != 55:
		return c, fmt.Errorf("%w: %q: version 00 is 55 characters, not %d", ErrTraceparent, s, len(s))
	case ver[0] != 0 && len(s) > 55 && s[55] != '-':
		return c, fmt.Errorf("%w: %q: a later version's fifth field starts with '-'", ErrTraceparent, s)
	}
	hex.Decode(c.Trace[:], []byte(s[3:35]))
	hex.Decode(c.Span[:], []byte(s[36:52]))
	var fl [1]byte
	hex.Decode(fl[:], []byte(s[53:55]))
	c.Flags = fl[0]
	if c.Trace == (TraceID{}) {
		return Context{}, fmt.Errorf("%w: %q: the trace id is all zeros", ErrTraceparent, s)
	}
	if c.Span == (SpanID{}) {
		return Context{}, fmt.Errorf("%w: %q: the parent id is all zeros", ErrTraceparent, s)
	}
	return c, nil
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
