package policy

import (
	"context"
	"time"

	"github.com/hookbus/hookbus/events"
)

// History answers what a policy's rules ask of the record: the session's
// earlier tool calls and the fleet's counters. Memory keeps one in memory;
// bus/history keeps it over the bus, shared by every worker.
type History interface {
	// SessionCount counts the session's tool calls before s.Event whose
	// action kind matches kinds ("shell", "file.*", "web.fetch|web.search")
	// within window before it.
	SessionCount(ctx context.Context, s Scope, kinds string, window time.Duration) (int64, error)
	// SessionSeen reports whether a tool call of the session before
	// s.Event, of a kind matching kinds, has a command, a path or a URL
	// matching the RE2 pattern.
	SessionSeen(ctx context.Context, s Scope, kinds, pattern string) (bool, error)
	// Counter returns the window's sum for k before this call.
	Counter(ctx context.Context, k CounterKey) (float64, error)
	// Add adds v to k's window: called once the policy lets the call
	// through.
	Add(ctx context.Context, k CounterKey, v float64) error
}

// Scope is the session a history question is about.
type Scope struct {
	Agent, Session string
	// Event is the event being decided: history is what came before it.
	Event *events.Event
}

// CounterKey names one window of a counter.
type CounterKey struct {
	// Policy and Counter name the counter.
	Policy, Counter string
	// Key is what the window is counted per (the counter's key
	// expression's value).
	Key string
	// Window is how far back the sum reaches.
	Window time.Duration
}
