package history

import (
	"context"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/internal/lazy"
	"github.com/hookbus/hookbus/policy"
	"github.com/nats-io/nats.go/jetstream"
)

// History is policy.History over a bus: the session answers read from the
// events stream, the fleet's counters kept in the counters stream. It is
// safe for concurrent use, and several Histories (one per worker, the
// bridge's) over connections to the same bus give the same answers.
type History struct {
	b        *bus.Bus
	opts     options
	optErr   error
	sessions *sessions
	stream   lazy.Handle[jetstream.Stream] // the counters stream
	settled  slotCache
}

var _ policy.History = (*History)(nil)

// New returns a History over b. It does no I/O. A bad option is not
// reported here: every method returns its error (wrapping ErrInvalid and
// ErrInvalidOption).
func New(b *bus.Bus, opts ...Option) *History {
	o := defaultOptions()
	var optErr error
	for _, opt := range opts {
		if err := opt(&o); err != nil && optErr == nil {
			optErr = err
		}
	}
	return &History{b: b, opts: o, optErr: optErr, sessions: newSessions(o.sessions)}
}

// SessionCount counts the session's tool calls of kinds stored before
// s.Event (its stream sequence, Stored, or the call recorded under its id;
// every call recorded so far when it is not recorded, as when a worker or
// the bridge decides it) within
// window before s.Event's time (the History's clock when it has none),
// as policy.Memory counts. kinds is one or more action
// kinds separated by '|', each a kind ("shell"), a group ("file.*") or
// "*".
//
// A call counts once it is recorded, whatever its hooks decided: a call a
// policy denied was attempted and is counted. Calls recorded without an
// action (by a hookbus older than actions) are not counted.
//
// It reads only what the session recorded since it was last asked about
// (one request to the stream's leader when nothing was): see
// docs/POLICIES.md, "Rules over history". Errors wrap ErrInvalid (a bad
// id or kinds), ErrUnavailable (the bus could not answer) or ErrRecord.
func (h *History) SessionCount(ctx context.Context, s policy.Scope, kinds string, window time.Duration) (int64, error) {
	if h.optErr != nil {
		return 0, h.optErr
	}
	if window < 0 {
		return 0, invalid("window %v is negative", window)
	}
	ss, err := h.caughtUp(ctx, s.Agent, s.Session)
	if err != nil {
		return 0, err
	}
	defer ss.mu.Unlock()
	return ss.count(kinds, ss.bound(s.Event), h.at(s).Add(-window))
}

// SessionSeen reports whether a tool call of the session of kinds (as in
// SessionCount) stored before s.Event has a command, a path or a URL the
// RE2 pattern matches. Calls are read, and errors returned, as in
// SessionCount; a pattern that is not RE2 wraps ErrInvalid.
func (h *History) SessionSeen(ctx context.Context, s policy.Scope, kinds, pattern string) (bool, error) {
	if h.optErr != nil {
		return false, h.optErr
	}
	ss, err := h.caughtUp(ctx, s.Agent, s.Session)
	if err != nil {
		return false, err
	}
	defer ss.mu.Unlock()
	return ss.seenBefore(kinds, pattern, ss.bound(s.Event))
}

// Counter returns the sum of what was added to k's window, fleet-wide:
// every slot the window ending now (the History's clock) overlaps, read
// from the counters stream's leader, so it counts up to one slot
// (k.Window/WithSlots) before the window began, never less than the
// window holds. The sum is in steps of Unit. Errors wrap ErrInvalid (a
// name that is not an id, a window out of range), ErrUnavailable or
// ErrRecord.
func (h *History) Counter(ctx context.Context, k policy.CounterKey) (float64, error) {
	if h.optErr != nil {
		return 0, h.optErr
	}
	return h.counter(ctx, k.Policy, k.Counter, k.Key, k.Window)
}

// Add adds v (finite, not negative; rounded to a Unit) to k's window's
// current slot, acknowledged by the counters stream: the server adds it
// (a JetStream counter), so concurrent Adds of every worker sum exactly.
// A Counter and the Add after it are not one step: calls decided at the
// same moment on several workers may each see the sum before the others'
// Adds. Errors are those of Counter; a bad value wraps ErrInvalid.
func (h *History) Add(ctx context.Context, k policy.CounterKey, v float64) error {
	if h.optErr != nil {
		return h.optErr
	}
	return h.add(ctx, k.Policy, k.Counter, k.Key, k.Window, v)
}

// at is the time a session window of s ends at: its event's time, or now.
func (h *History) at(s policy.Scope) time.Time {
	if s.Event != nil && !s.Event.Time.IsZero() {
		return s.Event.Time
	}
	return h.opts.clock()
}
