package loop

import (
	"cmp"
	"context"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// Interception is the hook chain as the engine uses it.
// *interceptors.Chain implements it.
type Interception interface {
	// MatchesCall counts the interceptors that match an event of stage
	// (tool, the kind of its call's action, agent); when none does the
	// engine skips the chain entirely (no round trip, no allocation).
	MatchesCall(stage events.Stage, tool string, kind events.ActionKind, agent string) int
	// Run calls them and returns what they decided. It does not modify ev.
	Run(ctx context.Context, ev *events.Event) (*interceptors.ChainResult, error)
}

// RunOption changes one run.
type RunOption func(*run)

// WithHooks runs the request with hooks instead of the engine's: typically
// a child of the engine's chain (interceptors.Chain.Child) holding the
// run's own registrations, which end with the run.
func WithHooks(h Interception) RunOption {
	return func(r *run) { r.hooks = h }
}

// allowed is the outcome of a stage that no hook matched. Never changed.
var allowed = &interceptors.ChainResult{Decision: interceptors.Allow}

// endOf is the end of the run the hooks' outcome puts on a stage that ends
// on deny or stop; nil for any other.
func endOf(out *interceptors.ChainResult) *errEnd {
	switch out.Decision {
	case interceptors.Deny:
		return &errEnd{events.ReasonDenied, describe(out)}
	case interceptors.Stop:
		return &errEnd{events.ReasonStopped, describe(out)}
	}
	return nil
}

// describe says why the hooks decided what they did, naming the plugin.
func describe(out *interceptors.ChainResult) string {
	s := cmp.Or(out.Reason, string(out.Decision))
	if out.Plugin != "" {
		s = out.Plugin + ": " + s
	}
	return s
}
