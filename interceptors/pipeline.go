package interceptors

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/hookbus/hookbus/events"
)

// Run runs the registrations of ev's stage that match ev (tool: ev.Subject,
// kind: the kind of the action its call carries, agent: ev.AgentID) and
// returns what they decided. ev is not modified.
//
// Mutating interceptors run one after another in order, each seeing the
// payload as the previous one left it; the first deny, mock, stop, ask or
// continue ends them. Then, unless the chain already ended with deny, mock,
// stop or continue, the validating interceptors run in parallel on the
// final payload, and any deny wins (over an ask too: a human is not asked to
// approve what policy forbids).
//
// Each call runs under its registration's timeout (within ctx), enforced
// even when the interceptor ignores ctx. A failure (timeout, error, panic,
// bad reply, or a transport's no responders) is recorded; with policy ignore
// the chain goes on, with policy fail it ends with deny (stop where the
// stage accepts no deny).
//
// A registration whose plugin is disabled (Disable) is not called: its
// place in Records holds a Skipped record instead. Shadow registrations
// (ModeShadow) are not called by Run either: ChainResult.Shadow starts them.
//
// Run returns an error only for a nil event, an event whose data was not
// fetched (DataRef without Data), or when ctx ends first: then the error
// wraps ctx.Err() and the ChainResult holds the records of the calls that
// completed.
func (c *Chain) Run(ctx context.Context, ev *events.Event) (*ChainResult, error) {
	if ev == nil {
		return nil, fmt.Errorf("%w: nil event", events.ErrMalformedEvent)
	}
	i := ev.Stage.InterceptIndex()
	if i < 0 {
		return newResult(ev, 0), nil
	}
	list := c.entries(i)
	if len(list) == 0 {
		return newResult(ev, 0), nil
	}
	var off map[string]Disabled
	if d := c.root().disabled.Load(); d != nil {
		off = *d
	}
	var buf [8]*entry
	var shadows []*entry
	matched, validators, skips := buf[:0], 0, 0
	var kind events.ActionKind
	kindRead := false
	for _, e := range list {
		if e.kinds.kinds && !kindRead {
			kind, kindRead = events.CallKind(ev.Data), true
		}
		if !e.matches(ev.Subject, kind, ev.AgentID) {
			continue
		}
		switch _, isOff := off[e.reg.Plugin]; {
		case isOff:
			skips++
		case e.reg.Mode == ModeShadow:
			shadows = append(shadows, e)
			continue
		case e.reg.Mode == ModeValidate:
			validators++
		}
		matched = append(matched, e)
	}
	if len(matched) == 0 && len(shadows) == 0 {
		return newResult(ev, 0), nil
	}
	if len(ev.Data) == 0 && ev.DataRef != "" {
		return nil, fmt.Errorf("%w: event %s data is stored at %q: fetch it before running interceptors", events.ErrPayload, ev.ID, ev.DataRef)
	}
	out, spare, memo := newCallResult(ev, len(matched))
	if out.Records == nil {
		out.Records = []CallRecord{} // shadows only: no records, as ever
	}
	if memo != nil {
		defer memo.end()
	}
	cur, ended, err := c.mutate(ctx, ev, out, matched, skips > 0, off, spare, memo)
	if err != nil {
		return out, err
	}
	if validators > 0 && (!ended || out.Decision == Ask) {
		if err := c.validate(ctx, out, matched, validators, cur, off, memo); err != nil {
			return out, err
		}
	}
	if len(shadows) > 0 {
		out.Shadow = c.shadowStarter(ctx, shadows, cur)
	}
	return out, nil
}

// mutate calls the matched mutating interceptors in order on ev, each on
// the payload as the previous one left it, until one ends the chain
// (ended), folding their records and decisions into out; the disabled
// ones (anyOff: some are) get a Skipped record. spare, when not nil, is
// what the first call gives its interceptor; memo is the run's. It returns the event as the
// last of them left it, and an error only when ctx ends first.
func (c *Chain) mutate(ctx context.Context, ev *events.Event, out *ChainResult, matched []*entry, anyOff bool, off map[string]Disabled, spare *callState, memo *Memo) (cur *events.Event, ended bool, err error) {
	cur = ev // what interceptors see; replaced by a copy when the payload changes
	for _, e := range matched {
		if anyOff {
			if d, isOff := off[e.reg.Plugin]; isOff {
				out.Records = append(out.Records, skipped(e, out.EventID, d))
				continue
			}
		}
		if e.reg.Mode == ModeValidate {
			continue
		}
		if err := ctx.Err(); err != nil {
			return cur, ended, interrupted(ev, err)
		}
		var p *pending
		var res result
		if e.bound {
			p, res = c.callBound(ctx, e, cur, spare, memo)
		} else {
			p = c.start(ctx, e, cur, spare, memo)
			res = p.wait(ctx)
		}
		spare = nil
		if res.err != nil && ctx.Err() != nil {
			return cur, ended, interrupted(ev, ctx.Err())
		}
		kind, dec, data := c.settle(ctx, out, p, res, cur.Data)
		switch {
		case kind == "": // failed
			ended = out.Decision != Allow && out.Decision != Modify
		case kind == Modify:
			out.Decision, out.Data = Modify, data
			next := *cur
			next.Data = data
			cur = &next
		case kind.Ends():
			c.end(out, p.e, dec, cur)
			ended = true
		}
		p.release()
		if ended {
			break
		}
	}
	return cur, ended, nil
}

// newResult returns the allow of ev with room for n records.
func newResult(ev *events.Event, n int) *ChainResult {
	out, _, _ := newCallResult(ev, n)
	return out
}

// newCallResult is newResult for a chain about to make n calls, in one
// allocation: the result of a single call holds its record and what the
// call gives its interceptor (returned too); the result of more holds the
// memo their calls share (returned too).
func newCallResult(ev *events.Event, n int) (*ChainResult, *callState, *Memo) {
	if n == 1 {
		r := &resultOfOne{ChainResult: ChainResult{Stage: ev.Stage, EventID: ev.ID, Decision: Allow, Data: ev.Data}}
		r.Records = r.rec[:0:1]
		return &r.ChainResult, &r.cs, nil
	}
	if n == 0 {
		return &ChainResult{Stage: ev.Stage, EventID: ev.ID, Decision: Allow, Data: ev.Data}, nil, nil
	}
	r := &resultOfMany{ChainResult: ChainResult{Stage: ev.Stage, EventID: ev.ID, Decision: Allow, Data: ev.Data}}
	r.Records = make([]CallRecord, 0, n)
	return &r.ChainResult, nil, &r.memo
}

// resultOfOne is a ChainResult with room for one record and one call's
// ctx and request.
type resultOfOne struct {
	ChainResult
	rec [1]CallRecord
	cs  callState
}

// resultOfMany is a ChainResult with the memo of its calls.
type resultOfMany struct {
	ChainResult
	memo Memo
}

func interrupted(ev *events.Event, err error) error {
	return fmt.Errorf("interceptors: %s chain of event %s interrupted: %w", ev.Stage, ev.ID, err)
}

// validate runs the n validating interceptors among matched in parallel
// and waits for all of them.
func (c *Chain) validate(ctx context.Context, out *ChainResult, matched []*entry, n int, cur *events.Event, off map[string]Disabled, memo *Memo) error {
	calls := make([]*pending, 0, n)
	for _, e := range matched {
		if _, isOff := off[e.reg.Plugin]; e.reg.Mode == ModeValidate && !isOff {
			calls = append(calls, c.start(ctx, e, cur, nil, memo))
		}
	}
	for i, p := range calls {
		res := p.wait(ctx)
		if res.err != nil && ctx.Err() != nil {
			for _, q := range calls[i+1:] {
				q.cancel()
			}
			return interrupted(cur, ctx.Err())
		}
		kind, dec, _ := c.settle(ctx, out, p, res, cur.Data)
		if kind == Deny && out.Decision != Deny { // the first deny, in run order, gives the reason
			c.end(out, p.e, dec, cur)
		}
		p.release()
	}
	return nil
}

// end makes an ending decision the outcome.
func (c *Chain) end(out *ChainResult, e *entry, dec *Decision, cur *events.Event) {
	out.Decision, out.Plugin, out.Reason = dec.Kind, e.reg.Plugin, dec.Reason
	switch dec.Kind {
	case Continue:
		msg := dec.Context // the message that forces another step
		if msg == "" {
			msg = dec.Reason
		}
		out.Context = append(out.Context, msg)
	case Mock:
		m, _ := dec.mockResult() // checked by settle
		r := &events.ToolResult{Content: m.Content, IsError: m.IsError, Mocked: true}
		if tb, err := events.Data[events.ToolBefore](cur); err == nil {
			r.CallID, r.Name = tb.Call.ID, tb.Call.Name
		}
		out.Mock = r
		if n := len(out.Records); n > 0 && out.Records[n-1].Plugin == e.reg.Plugin {
			out.Records[n-1].Mock = r // the record of this call, just settled
		}
	}
	if out.Reason == "" {
		out.Reason = defaultReason(dec.Kind, e.reg.Plugin)
	}
}

func defaultReason(k Kind, plugin string) string {
	switch k {
	case Deny:
		return "denied by " + plugin
	case Stop:
		return "stopped by " + plugin
	case Ask:
		return "approval requested by " + plugin
	case Mock:
		return "mocked by " + plugin
	case Continue:
		return "continued by " + plugin
	}
	return ""
}

// settle records a finished call in out. When the call succeeded it returns
// the decision's kind, the decision (nil for a nil answer, which allows) and,
// for a modify, the new payload. When it failed it applies the failure
// policy to out and returns an empty kind.
func (c *Chain) settle(ctx context.Context, out *ChainResult, p *pending, res result, data json.RawMessage) (Kind, *Decision, json.RawMessage) {
	reg := &p.e.reg
	out.Records = append(out.Records, CallRecord{
		Plugin: reg.Plugin, Stage: reg.Stage, EventID: out.EventID, Mode: reg.Mode,
		Remote: reg.Remote, Latency: res.latency,
	})
	rec := &out.Records[len(out.Records)-1]

	dec, next, err := checkReply(reg, res, data)
	if err != nil {
		c.fail(ctx, out, rec, reg, callError(reg, err))
		return "", nil, nil
	}
	if dec == nil {
		rec.Decision = Allow
		c.logDecision(ctx, out, reg, rec)
		return Allow, nil, data
	}
	rec.Decision, rec.Reason, rec.Warnings, rec.Annotations, rec.Context = dec.Kind, dec.Reason, dec.Warnings, dec.Annotations, dec.Context
	rec.Policy = policyOf(reg, dec)
	switch {
	case dec.Kind == Modify && dec.Data != nil:
		rec.Patch, err = Diff(data, next)
		if err != nil {
			c.logger.WarnContext(ctx, "interceptor: cannot diff modification", "plugin", reg.Plugin, "stage", reg.Stage, "err", err)
		}
	case dec.Kind == Modify:
		rec.Patch = dec.Patch
	}
	if dec.Context != "" && dec.Kind != Continue {
		out.Context = append(out.Context, dec.Context)
	}
	c.logDecision(ctx, out, reg, rec)
	return dec.Kind, dec, next
}

func (c *Chain) logDecision(ctx context.Context, out *ChainResult, reg *Registration, rec *CallRecord) {
	if c.logger.Enabled(ctx, slog.LevelDebug) {
		c.logger.DebugContext(ctx, "interceptor decided", "plugin", reg.Plugin, "stage", reg.Stage,
			"event", out.EventID, "decision", rec.Decision, "reason", rec.Reason, "latency", rec.Latency)
	}
}

// checkReply checks a call's result: the decision (nil allows) and, for a
// modify, the new payload. Its error is the failure.
func checkReply(reg *Registration, res result, data json.RawMessage) (*Decision, json.RawMessage, error) {
	if res.err != nil {
		return nil, nil, res.err
	}
	dec := res.dec
	if dec == nil {
		return nil, data, nil
	}
	if err := dec.Validate(reg.Stage); err != nil {
		return nil, nil, err
	}
	if reg.Mode == ModeValidate && dec.Kind != Allow && dec.Kind != Deny {
		return nil, nil, fmt.Errorf("%w: a validating interceptor answered %s (it may allow or deny only)", ErrBadReply, dec.Kind)
	}
	if dec.Kind != Modify {
		return dec, data, nil
	}
	next := dec.Data
	if next == nil {
		var err error
		if next, err = applyPatch(data, dec.Patch); err != nil {
			return nil, nil, err
		}
	}
	if err := checkPayload(reg.Stage, next); err != nil {
		return nil, nil, err
	}
	return dec, next, nil
}

// checkPayload makes sure a modified payload still decodes as the stage's
// payload (a wrong type is a bad reply). Unknown fields pass: readers ignore
// them (docs/PROTOCOL.md), so a plugin built against a newer payload with an
// added field still works; the audit patch shows what it added.
func checkPayload(stage events.Stage, data json.RawMessage) error {
	p, err := events.PayloadFor(stage)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, p); err != nil {
		return fmt.Errorf("%w: modified payload is not a %s payload: %v", ErrBadReply, stage, err)
	}
	return nil
}

// fail records a failure and applies the registration's policy.
func (c *Chain) fail(ctx context.Context, out *ChainResult, rec *CallRecord, reg *Registration, he *CallError) {
	f := &CallFailure{Kind: he.Kind, Err: he, Policy: reg.Policy, Outcome: FailedOpen}
	rec.Failure = f
	if p, ok := he.Err.(*panicked); ok {
		c.logger.ErrorContext(ctx, "interceptor panicked", "plugin", reg.Plugin, "stage", reg.Stage, "panic", p.value, "stack", string(p.stack))
	}
	if reg.Policy != PolicyFail {
		c.logger.WarnContext(ctx, "interceptor failed open", "plugin", reg.Plugin, "stage", reg.Stage, "event", out.EventID, "kind", he.Kind, "err", he.Err)
		return
	}
	f.Outcome = FailedClosed
	c.logger.ErrorContext(ctx, "interceptor failed closed", "plugin", reg.Plugin, "stage", reg.Stage, "event", out.EventID, "kind", he.Kind, "err", he.Err)
	if out.Decision != Allow && out.Decision != Modify && out.Decision != Ask {
		return // already ended, by an earlier validator
	}
	out.Decision, out.Plugin = ClosedKind(out.Stage), reg.Plugin
	out.Reason = ClosedReason(he.Kind)
}
