package loop

import (
	"context"
	"fmt"
	"strings"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// Interception is the hook chain as the engine uses it.
// *interceptors.Chain implements it.
type Interception interface {
	// Has reports whether any interceptor matches; when none does the
	// engine skips the chain entirely (no round trip, no allocation).
	Has(stage events.Stage, tool, agent string) bool
	Run(ctx context.Context, ev *events.Event) (*interceptors.Outcome, error)
}

// RunOption changes one run.
type RunOption func(*run)

// WithHooks runs the request with hooks instead of the engine's: typically
// a child of the engine's chain (interceptors.Chain.Child) holding the
// run's own registrations, which end with the run.
func WithHooks(h Interception) RunOption {
	return func(r *run) { r.hooks = h }
}

// verdict is what the hooks decided on one event, in the engine's terms.
type verdict struct {
	kind    interceptors.Kind
	reason  string
	plugin  string
	context string
	mock    *events.ToolResult
}

// approvalRequired is the reason an ask becomes a deny until approvals exist.
const approvalRequired = "approval required"

// intercept asks the hooks registered on ev's stage, publishes one
// hook.decided or hook.failed per interceptor called, and leaves the payload
// as they left it in ev.Data. With no matching hook it costs nothing.
func (r *run) intercept(ctx context.Context, ev *events.Event) (verdict, error) {
	h := r.hooks
	if h == nil || !h.Has(ev.Stage, ev.Subject, r.req.AgentID) {
		return verdict{kind: interceptors.Allow}, nil
	}
	out, err := h.Run(ctx, ev)
	if err != nil {
		return verdict{}, fmt.Errorf("loop: hooks on %s: %w", ev.Stage, err)
	}
	for i := range out.Records {
		st, p := out.Records[i].Audit()
		if _, err := r.emit(ctx, st, p, out.Records[i].Plugin, false); err != nil {
			return verdict{}, err
		}
	}
	ev.Data = out.Data
	v := verdict{
		kind: out.Decision, reason: out.Reason, plugin: out.Plugin,
		context: strings.Join(out.Context, "\n"), mock: out.Mock,
	}
	if v.kind == interceptors.Ask {
		// Approvals are not wired to a human yet: an ask is a deny, and the
		// audit says so.
		var call events.ToolCall
		if ev.Stage == events.StageToolBefore {
			var tb events.ToolBefore
			if err := ev.DecodeData(&tb); err == nil {
				call = tb.Call
			}
		}
		if _, err := r.emit(ctx, events.StageApprovalRequested, events.ApprovalRequested{Call: call, Plugin: v.plugin, Reason: v.reason}, ev.Subject, false); err != nil {
			return verdict{}, err
		}
		if _, err := r.emit(ctx, events.StageApprovalResolved, events.ApprovalResolved{
			CallID: call.ID, Approved: false, By: "hookbus",
			Reason: approvalRequired + ": no approver is configured, so ask is treated as deny",
		}, ev.Subject, false); err != nil {
			return verdict{}, err
		}
		v.kind = interceptors.Deny
		v.reason = approvalRequired + " (" + v.reason + ")"
	}
	return v, nil
}
