package loop

import (
	"context"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// Interception is the hook chain as the engine uses it.
// *interceptors.Chain implements it.
type Interception interface {
	// Matches counts the interceptors that match an event of stage (tool,
	// agent); when none does the engine skips the chain entirely (no round
	// trip, no allocation).
	Matches(stage events.Stage, tool, agent string) int
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

// stageAction is the engine's reading of an interceptors.ChainResult: what the
// hooks decided on one event, in the terms a stage acts on.
type stageAction struct {
	kind    interceptors.Kind
	reason  string
	plugin  string
	context string
	mock    *events.ToolResult
}

var allowed = stageAction{kind: interceptors.Allow}

// endOf is the end of the run a stageAction puts on a stage that ends on deny
// or stop; nil for any other.
func endOf(v stageAction) *errEnd {
	switch v.kind {
	case interceptors.Deny:
		return &errEnd{events.ReasonDenied, v.describe()}
	case interceptors.Stop:
		return &errEnd{events.ReasonStopped, v.describe()}
	}
	return nil
}

// describe says why, naming the plugin.
func (v stageAction) describe() string {
	s := v.reason
	if s == "" {
		s = string(v.kind)
	}
	if v.plugin != "" {
		s = v.plugin + ": " + s
	}
	return s
}

// describeDecided describes a recorded hook decision as describe does a
// live one.
func describeDecided(d *events.HookDecided) string {
	return stageAction{kind: interceptors.Kind(d.Decision), reason: d.Reason, plugin: d.Plugin}.describe()
}
