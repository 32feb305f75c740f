package history

import (
	"context"
	"errors"
	"fmt"

	"github.com/hookbus/hookbus/bus"
	"github.com/nats-io/nats.go"
)

// Errors of the history. Every error a method of History returns wraps one
// of these (or the caller's context error), so callers match them with
// errors.Is.
var (
	// ErrUnavailable is returned by every method when the bus could not
	// answer: the server is down or unreachable, a cluster has no leader,
	// a read could not reach the stream leader's last sequence in time, the
	// connection is closed. A policy's failurePolicy decides what the call
	// it was deciding gets (ignore: allowed, fail: refused). When the bus
	// could not answer for a while, bus.Unavailable reports true on the
	// error as well.
	ErrUnavailable = errors.New("hookbus: history unavailable")
	// ErrRecord is returned when the bus answered but the record cannot be
	// read or written: the bus is not provisioned (no counters stream), the
	// connection's user may not read or write it, a counter's message does
	// not hold a counter's value.
	ErrRecord = errors.New("hookbus: history record unreadable")
	// ErrInvalid is returned for a bad question: an invalid agent or
	// session id, kinds that name no action kind, a pattern that is not
	// RE2, a counter's window out of range, a value that is not a finite
	// number, or a bad option to New.
	ErrInvalid = errors.New("hookbus: invalid history query")
	// ErrInvalidOption is bus.ErrInvalidOption, returned (with ErrInvalid)
	// by New's options.
	ErrInvalidOption = bus.ErrInvalidOption
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// unreachable reports whether err says that the bus could not answer,
// rather than that it refused.
func unreachable(err error) bool {
	return bus.Unavailable(err) ||
		errors.Is(err, nats.ErrConnectionClosed) ||
		errors.Is(err, nats.ErrConnectionDraining) ||
		errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, nats.ErrNoServers) ||
		errors.Is(err, nats.ErrInvalidConnection)
}

// wrap names what failed and wraps err with ErrUnavailable or ErrRecord.
// The caller's context ending is returned as the context's error.
func wrap(ctx context.Context, what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrInvalid) {
		return err
	}
	if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
		if errors.Is(cerr, context.DeadlineExceeded) {
			return fmt.Errorf("%w: %s: %w", ErrUnavailable, what, err)
		}
		return fmt.Errorf("hookbus: history: %s: %w", what, err)
	}
	if unreachable(err) {
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, what, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrRecord, what, err)
}
