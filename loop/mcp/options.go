package mcp

import (
	"cmp"
	"fmt"
	"log/slog"
)

// Option configures Connect and ConnectAll. Options validate their
// argument: a bad value makes Connect return an error wrapping
// ErrInvalidConfig.
type Option func(*options) error

type options struct {
	logger *slog.Logger
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

func buildOptions(opts []Option) (options, error) {
	var o options
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return o, err
		}
	}
	o.logger = cmp.Or(o.logger, slog.New(slog.DiscardHandler))
	return o, nil
}
