package history

import (
	"fmt"
	"time"
)

// Option configures a History (New).
type Option func(*options) error

type options struct {
	sessions int
	slots    int
	clock    func() time.Time
}

// DefaultSessions is how many sessions a History keeps folded (WithSessions).
const DefaultSessions = 1024

// DefaultSlots is how many slots a counter's window is split into
// (WithSlots).
const DefaultSlots = 12

func defaultOptions() options {
	return options{sessions: DefaultSessions, slots: DefaultSlots, clock: time.Now}
}

// WithSessions bounds how many sessions the History keeps folded in memory
// (the least recently asked about is dropped first, and read again from the
// record when asked about). n must be at least 1; default DefaultSessions.
func WithSessions(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("%w: %w: sessions %d (at least 1)", ErrInvalid, ErrInvalidOption, n)
		}
		o.sessions = n
		return nil
	}
}

// WithSlots sets how many slots a counter's window is split into: a window
// sums the slots it overlaps, so it counts what was added up to one slot
// (window/n) before it began, never less than the window holds. More slots
// count closer to the window and cost one more read each. n must be between
// 1 and 60; default DefaultSlots. Every History sharing counters must use
// the same n (the slot is part of the counter's subject).
func WithSlots(n int) Option {
	return func(o *options) error {
		if n < 1 || n > 60 {
			return fmt.Errorf("%w: %w: slots %d (1 to 60)", ErrInvalid, ErrInvalidOption, n)
		}
		o.slots = n
		return nil
	}
}

// WithClock sets the clock counters' windows and session windows of an
// event without a time are measured by (default time.Now).
func WithClock(now func() time.Time) Option {
	return func(o *options) error {
		if now == nil {
			return fmt.Errorf("%w: %w: nil clock", ErrInvalid, ErrInvalidOption)
		}
		o.clock = now
		return nil
	}
}
