package remote

import (
	"context"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// shadowPublishTimeout bounds the publish of one shadow decision.
const shadowPublishTimeout = 10 * time.Second

// ShadowSink returns the interceptors.ShadowSink that records each shadow
// call on b's events stream: a hook.decided ("shadow": true) or a hook.failed
// (outcome "shadow") on the subject of the run the event belongs to, with
// the run's agent, session, run and step, and source as its CloudEvent
// source. It is published outside the run's sequence (no seq, not fenced:
// the run may have ended), so it never delays or disturbs the run. A
// publish that fails is logged. See docs/PROTOCOL.md, "Shadow mode".
func ShadowSink(b *bus.Bus, source string) interceptors.ShadowSink {
	if source == "" {
		source = "hookbus/loop"
	}
	return func(ctx context.Context, ev *events.Event, rec interceptors.CallRecord) {
		st, payload := rec.Audit()
		if st == events.StageHookFailed {
			f := rec.HookFailed()
			f.Outcome = interceptors.OutcomeShadow
			payload = f
		}
		e, err := events.New(st, events.Meta{
			Source: source, AgentID: ev.AgentID, SessionID: ev.SessionID, RunID: ev.RunID, Step: ev.Step,
			Subject: rec.Plugin, Traceparent: ev.Traceparent,
			ParentAgentID: ev.ParentAgentID, ParentSessionID: ev.ParentSessionID, ParentRunID: ev.ParentRunID,
		}, payload)
		if err != nil {
			b.Logger().Warn("hookbus shadow: cannot record a shadow decision", "plugin", rec.Plugin, "event", ev.ID, "err", err)
			return
		}
		ctx, cancel := context.WithTimeout(ctx, shadowPublishTimeout)
		defer cancel()
		if err := b.PublishSync(ctx, e); err != nil {
			b.Logger().Warn("hookbus shadow: shadow decision not recorded", "plugin", rec.Plugin, "event", ev.ID, "err", err)
		}
	}
}
