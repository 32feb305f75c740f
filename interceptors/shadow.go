package interceptors

import (
	"context"

	"github.com/hookbus/hookbus/events"
)

// ModeShadow interceptors are called after the chain, off the caller's
// path: Run does not wait for them and never applies what they decide. Their
// decisions go to the chain's ShadowSink (WithShadowSink), marked Shadow, so
// that a candidate policy can be watched on live traffic before it is
// trusted. See docs/PROTOCOL.md, "Shadow mode".
const ModeShadow Mode = "shadow"

// OutcomeShadow is the CallFailure.Outcome of a failed shadow call: nothing was
// applied.
const OutcomeShadow = "shadow"

// ShadowSink receives the record of each shadow call once it is over
// (CallRecord.Shadow set, EventID the id given to ChainResult.Shadow). ev is the
// event the shadow interceptor saw. It is called on a goroutine of the
// call's own, after the Run that started it has returned.
type ShadowSink func(ctx context.Context, ev *events.Event, rec CallRecord)

// WithShadowSink sets where the decisions of shadow registrations go.
// Without it they are logged (debug) and dropped.
func WithShadowSink(s ShadowSink) Option { return func(c *Chain) { c.shadowSink = s } }

// shadowStarter returns the ChainResult.Shadow of a Run whose matching shadow
// registrations are list and whose chain left the payload as cur.
func (c *Chain) shadowStarter(ctx context.Context, list []*entry, cur *events.Event) func(string) {
	sink := c.root().shadowSink
	ctx = context.WithoutCancel(ctx) // the run may end first
	return func(eventID string) {
		ev := *cur
		ev.ID = eventID
		for _, e := range list {
			go func() {
				p := c.start(ctx, e, &ev, nil, nil)
				rec := c.shadowRecord(ctx, p.e, p.wait(ctx), &ev)
				p.release()
				if sink != nil {
					sink(ctx, &ev, rec)
				}
			}()
		}
	}
}

// shadowRecord is the record of one shadow call.
func (c *Chain) shadowRecord(ctx context.Context, e *entry, res result, ev *events.Event) CallRecord {
	reg := &e.reg
	rec := CallRecord{
		Plugin: reg.Plugin, Stage: reg.Stage, EventID: ev.ID, Mode: ModeShadow,
		Remote: reg.Remote, Latency: res.latency, Shadow: true,
	}
	dec, next, err := checkReply(reg, res, ev.Data)
	if err != nil {
		he := callError(reg, err)
		rec.Failure = &CallFailure{Kind: he.Kind, Err: he, Policy: reg.Policy, Outcome: OutcomeShadow}
		c.logger.DebugContext(ctx, "shadow interceptor failed", "plugin", reg.Plugin, "stage", reg.Stage, "err", err)
		return rec
	}
	if dec == nil {
		rec.Decision = Allow
		return rec
	}
	rec.Decision, rec.Reason, rec.Warnings, rec.Annotations, rec.Policy = dec.Kind, dec.Reason, dec.Warnings, dec.Annotations, policyOf(reg, dec)
	switch {
	case dec.Kind == Modify && dec.Data != nil:
		rec.Patch, _ = Diff(ev.Data, next)
	case dec.Kind == Modify:
		rec.Patch = dec.Patch
	case dec.Kind == Mock:
		if m, err := dec.mockResult(); err == nil {
			rec.Mock = &events.ToolResult{Content: m.Content, IsError: m.IsError, Mocked: true}
		}
	}
	c.logger.DebugContext(ctx, "shadow interceptor decided", "plugin", reg.Plugin, "stage", reg.Stage, "decision", rec.Decision)
	return rec
}
