package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/harness"
	"github.com/hookbus/hookbus/interceptors"
)

// Bounds of the time a permission request keeps, at the end of its
// deadline, to record its expiry and answer.
const (
	minReserve = 500 * time.Millisecond
	maxReserve = 2 * time.Second
)

// permission handles a permission request (the harness asks whether a
// tool call may run: approval.requested). It finds the call's tool.before
// in the open run (the harness's PreToolUse, recorded before) or, when
// there is none, runs the tool.before interceptors on the call and records
// them as a PreToolUse would be: one that denies the call answers the
// request deny. Otherwise it records approval.requested (the call, the
// harness's suggestions) and waits for the call's approval.resolved,
// recorded by whoever answers (approval.Answer: observer approve, the
// web page, any client). Nobody answering before the deadline, it records
// the request's expiry (approval.resolved, channel expiry) and answers by
// the policy: deny under PolicyFail, nothing under PolicyIgnore (the
// harness's own prompt decides).
func (b *Bridge) permission(ctx context.Context, in harness.Input, m *harness.Mapped, decided *atomic.Pointer[harness.Outcome]) (*harness.Outcome, error) {
	req, ok := m.Payload.(events.ApprovalRequested)
	if !ok {
		return nil, fmt.Errorf("%w: %s: approval.requested without its payload", harness.ErrBadInput, in.Event())
	}
	evs, err := b.cfg.Store.SessionEvents(ctx, b.cfg.Agent, in.Session())
	if err != nil {
		return nil, fmt.Errorf("read session: %w", err)
	}
	st := fold(evs)
	out := &harness.Outcome{}
	asked := req.Call.Arguments
	if id := findCall(evs, st, req.Call); id != "" {
		req.Call.ID = id
	} else {
		if req.Call.ID == "" {
			req.Call.ID = events.NewID()
		}
		if out.Chain, st, err = b.toolBefore(ctx, in, st, req.Call); err != nil {
			return nil, err
		}
		if c := out.Chain; c != nil {
			switch c.Decision {
			case interceptors.Deny, interceptors.Stop, interceptors.Mock:
				return out, nil
			}
			if p, err := interceptors.ResultData[events.ToolBefore](c); err == nil {
				req.Call = p.Call
			}
		}
	}
	deadline, _ := ctx.Deadline()
	reserve := min(max(time.Until(deadline)/10, minReserve), maxReserve)
	waitUntil := deadline.Add(-reserve)
	req.ExpiresAt = waitUntil.UTC().Truncate(time.Second)
	req.OnExpiry = events.ActionRejectAndContinue
	p, err := b.newPlan(in, &harness.Mapped{Stage: events.StageApprovalRequested, Subject: m.Subject, Payload: req})
	if err != nil {
		return nil, err
	}
	if err := b.append(ctx, p, st); err != nil {
		return nil, err
	}
	at := p.storedAt[p.main.ID]
	wctx, cancel := context.WithDeadline(ctx, waitUntil)
	ans, err := b.cfg.Store.WaitEvent(wctx, b.cfg.Agent, in.Session(), events.StageApprovalResolved, at+1, answers(req.Call.ID))
	cancel()
	if err == nil && ans != nil {
		return b.answered(ans, req.Call, asked, out)
	}
	if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		if err == nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("wait for the answer to call %s: %w", req.Call.ID, err)
	}
	decided.Store(b.expired(out, req))
	return b.expire(ctx, in, p, req, asked, out)
}

// answers matches the approval.resolved of call.
func answers(call string) func(*events.Event) bool {
	return func(e *events.Event) bool {
		var r events.ApprovalResolved
		return e.DecodeData(&r) == nil && r.CallID == call
	}
}

// answered is the outcome of a recorded answer: the approval, with the
// arguments the call runs with when they are not those the harness asked
// about (the approver's edit, else the tool.before interceptors' changes).
func (b *Bridge) answered(ans *events.Event, call events.ToolCall, asked json.RawMessage, out *harness.Outcome) (*harness.Outcome, error) {
	var r events.ApprovalResolved
	if err := ans.DecodeData(&r); err != nil {
		return nil, fmt.Errorf("approval.resolved %s: %w", ans.ID, err)
	}
	if r.Approved && len(r.Arguments) == 0 && !sameJSON(call.Arguments, asked) {
		r.Arguments = call.Arguments
	}
	out.Approval = &r
	return out, nil
}

// expired is the outcome of a request nobody answered in time: a deny
// under PolicyFail; under PolicyIgnore no answer (the harness's own
// prompt decides), with a warning.
func (b *Bridge) expired(out *harness.Outcome, req events.ApprovalRequested) *harness.Outcome {
	o := *out
	if b.cfg.Policy == interceptors.PolicyFail {
		o.Approval = &events.ApprovalResolved{CallID: req.Call.ID, Action: events.ActionRejectAndContinue,
			By: events.IdentityHookbus, Reason: expiryReason(b.cfg.Policy), Expired: true,
			Actor: events.Actor{Identity: events.IdentityHookbus, Channel: events.ChannelExpiry}}
		return &o
	}
	o.Warnings = append(append([]string(nil), o.Warnings...), "hookbus: nobody answered this permission request in time; "+expiryReason(b.cfg.Policy))
	return &o
}

func expiryReason(policy interceptors.Policy) string {
	if policy == interceptors.PolicyFail {
		return "denied (policy fail)"
	}
	return "left to the coding agent's own permission prompt (policy ignore)"
}

// expire records the expiry of the request p recorded (an
// approval.resolved on the plain subject, channel expiry) after the run's
// last event, unless an answer got there first (then it is the answer).
func (b *Bridge) expire(ctx context.Context, in harness.Input, asked *plan, req events.ApprovalRequested, args json.RawMessage, out *harness.Outcome) (*harness.Outcome, error) {
	res := events.ApprovalResolved{CallID: req.Call.ID, Action: events.ActionRejectAndContinue, By: events.IdentityHookbus,
		Actor:    events.Actor{Identity: events.IdentityHookbus, Channel: events.ChannelExpiry},
		Reason:   "no answer by " + req.ExpiresAt.Format(time.RFC3339) + ": " + expiryReason(b.cfg.Policy),
		AnswerID: events.NewID(), AnsweredAt: time.Now().UTC(), Expired: true}
	p, err := b.newPlan(in, &harness.Mapped{Stage: events.StageApprovalResolved, Subject: req.Call.Name, Payload: res})
	if err != nil {
		return nil, err
	}
	run := asked.main.RunID
	for attempt := 1; ; attempt++ {
		evs, err := b.cfg.Store.SessionEvents(ctx, b.cfg.Agent, in.Session())
		if err != nil {
			return nil, fmt.Errorf("read session: %w", err)
		}
		if ans := lastMatch(evs, answers(req.Call.ID)); ans != nil {
			return b.answered(ans, req.Call, args, out)
		}
		st := fold(evs)
		if st.run != run || !st.open() {
			return b.expired(out, req), nil // the run went on or ended: the expiry has no place in it
		}
		e := p.main
		e.RunID = run
		st.chain(run).Next(e)
		_, err = b.cfg.Store.AppendAfter(ctx, e, st.last)
		b.cfg.Cache.forget(b.cfg.Agent, in.Session()) // the cache does not follow this append
		if err == nil {
			return b.expired(out, req), nil
		}
		if !isFenced(err) || attempt == MaxAttempts {
			return nil, fmt.Errorf("append the expiry of call %s: %w", req.Call.ID, err)
		}
	}
}

// toolBefore runs the tool.before interceptors on call, as a PreToolUse
// would have, and records their decisions and the call's tool.before;
// with no interceptor matching, it records nothing. It returns the chain's
// outcome (nil when none ran) and the session's state after the appends.
func (b *Bridge) toolBefore(ctx context.Context, in harness.Input, st *state, call events.ToolCall) (*interceptors.ChainResult, *state, error) {
	if b.cfg.Hooks == nil {
		return nil, st, nil
	}
	n := b.cfg.Hooks.MatchesCall(events.StageToolBefore, call.Name, call.Kind(), b.cfg.Agent)
	if n == 0 {
		return nil, st, nil
	}
	p, err := b.newPlan(in, &harness.Mapped{Stage: events.StageToolBefore, Subject: call.Name, Payload: events.ToolBefore{Call: call}})
	if err != nil {
		return nil, nil, err
	}
	p.assign(st)
	p.main.Seq += uint64(n)
	res, err := b.cfg.Hooks.Run(ctx, p.main)
	if err != nil {
		return nil, nil, fmt.Errorf("hooks on %s: %w", events.StageToolBefore, err)
	}
	if err := p.decided(res, b.cfg.Source); err != nil {
		return nil, nil, err
	}
	if err := b.append(ctx, p, st); err != nil {
		return nil, nil, err
	}
	return res, st, nil
}

// findCall returns the id of the call of the open run's latest tool.before
// for call's tool whose arguments are call's (those they share), that has
// no end (tool.after, tool.failed) and no approval.requested yet: the
// PreToolUse of the call the harness now asks permission for. "" when
// there is none.
func findCall(evs []*events.Event, st *state, call events.ToolCall) string {
	if !st.open() {
		return ""
	}
	return latestCall(evs, st.run, call, sharedEqual, events.StageToolAfter, events.StageToolFailed, events.StageApprovalRequested)
}

// latestCall returns the id of run's latest tool.before in evs for call's
// tool whose arguments same finds equal to call's and whose call no later
// event of a stage in ends names; "" when there is none.
func latestCall(evs []*events.Event, run string, call events.ToolCall, same func(a, b json.RawMessage) bool, ends ...events.Stage) string {
	done := map[string]bool{}
	for _, e := range slices.Backward(evs) {
		if e.RunID != run {
			continue
		}
		switch {
		case slices.Contains(ends, e.Stage):
			var p struct {
				Call events.ToolCall `json:"call"`
			}
			if e.DecodeData(&p) == nil {
				done[p.Call.ID] = true
			}
		case e.Stage == events.StageToolBefore:
			var p events.ToolBefore
			if e.DecodeData(&p) != nil || p.Call.Name != call.Name || p.Call.ID == "" || done[p.Call.ID] {
				continue
			}
			if same(p.Call.Arguments, call.Arguments) {
				return p.Call.ID
			}
		}
	}
	return ""
}

// sharedEqual reports whether two JSON objects agree on every member they
// share, and share one (Codex CLI's permission request adds a description
// to the command its PreToolUse had).
func sharedEqual(a, b json.RawMessage) bool {
	var x, y map[string]any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b))
	}
	shared := 0
	for k, v := range x {
		if w, ok := y[k]; ok {
			if !reflect.DeepEqual(v, w) {
				return false
			}
			shared++
		}
	}
	return shared > 0 || len(x) == len(y)
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// lastMatch is the last of evs that match is true of, or nil.
func lastMatch(evs []*events.Event, match func(*events.Event) bool) *events.Event {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Stage == events.StageApprovalResolved && match(evs[i]) {
			return evs[i]
		}
	}
	return nil
}
