package mcp

import (
	"fmt"
	"log/slog"
	"net/http"
)

// Option configures Connect and ConnectAll. Options validate their
// argument: a bad value makes Connect return an error wrapping
// ErrInvalidConfig.
type Option func(*options) error

type options struct {
	logger    *slog.Logger
	transport http.RoundTripper
}

// WithLogger sets the logger for connections, reconnections and skipped
// tools (default: discard).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", ErrInvalidConfig)
		}
		o.logger = l
		return nil
	}
}

// WithHTTPTransport sets the round tripper of HTTP servers' requests
// (default: a clone of http.DefaultTransport), e.g. for a proxy or custom
// TLS roots. Configured headers are added on top of it.
func WithHTTPTransport(rt http.RoundTripper) Option {
	return func(o *options) error {
		if rt == nil {
			return fmt.Errorf("%w: nil HTTP transport", ErrInvalidConfig)
		}
		o.transport = rt
		return nil
	}
}

func buildOptions(opts []Option) (options, error) {
	var o options
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return o, err
		}
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	if o.transport == nil {
		o.transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	return o, nil
}
