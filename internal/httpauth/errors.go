package httpauth

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidConfig is returned by New, Flags.Listen, ParseTokens,
	// LoadTokens and ReadSecretFile for a configuration they cannot serve
	// safely: a bad public URL, proxy or token line, a trusted proxy
	// without its secret, a token or secret too short or in a file every
	// user may read, a TLS key pair that does not load, or a
	// non-loopback listener without a way to authenticate. The message
	// names what is wrong (never a token).
	ErrInvalidConfig = errors.New("httpauth: invalid config")
	// ErrUnprotected (an ErrInvalidConfig) is returned by New and
	// Flags.Listen for a listener on a non-loopback address with no way to
	// authenticate callers, or without a public URL to serve.
	ErrUnprotected = fmt.Errorf("%w: unprotected listener", ErrInvalidConfig)
)
