package loop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"strings"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/record"
)

// runCalls runs a step's calls in order; waiting reports whether any of
// them waits for approval (the others ran).
func (r *run) runCalls(ctx context.Context, calls []events.ToolCall) (waiting bool, err error) {
	for _, c := range calls {
		err := r.callTool(ctx, c)
		switch {
		case errors.Is(err, errChildWaiting):
			waiting, r.childWaiting = true, true
		case errors.Is(err, errAwaitApproval):
			waiting = true
		case err != nil:
			return false, err
		}
	}
	return waiting, nil
}

// callTool runs one tool call through tool.before (write-ahead: the record
// has it before the tool runs) and tool.after.
func (r *run) callTool(ctx context.Context, call events.ToolCall) error {
	call = call.WithAction(events.HarnessHookbus)
	tb, out, err := intercepted(ctx, r, stage{stage: events.StageToolBefore, subject: call.Name, kind: call.Kind(), sync: true}, events.ToolBefore{Call: call}, refreshAction)
	if err != nil {
		return err
	}
	call = tb.Call
	if held, err := r.admit(ctx, call, out, true); held {
		return err
	}
	if r.isTask(call) {
		res, err := r.callSubagent(ctx, call)
		if err != nil {
			return err
		}
		return r.toolAfter(ctx, call, res, true)
	}
	return r.runTool(ctx, call)
}

// runTool runs call's tool and records its result through tool.after; when
// the run's ctx ends meanwhile, nothing: the run's end records the call's
// outcome.
func (r *run) runTool(ctx context.Context, call events.ToolCall) error {
	res := r.execTool(ctx, call)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return r.toolAfter(ctx, call, res, true)
}

// refreshAction normalizes a tool.before's call again once the hooks
// answered, so that the action recorded and passed on describes the call as
// it runs (a hook may have rewritten its arguments).
func refreshAction(p *events.ToolBefore, _ *interceptors.ChainResult) bool {
	before := p.Call.Action
	p.Call = p.Call.WithAction(events.HarnessHookbus)
	return before == nil || !reflect.DeepEqual(*before, *p.Call.Action)
}

// admit applies what stands between a call's tool.before and its tool, for
// a first attempt and a resumed one alike: the tool.before hooks' outcome,
// as the chain answers it or as the record holds it (stop ends the run,
// deny and mock give the call its result, ask waits for a human), then,
// with policy, the agent's approval policy. held reports that the tool is
// not to run; err is then how the call ended (nil once its result is
// recorded, errAwaitApproval when it waits).
func (r *run) admit(ctx context.Context, call events.ToolCall, out *interceptors.ChainResult, policy bool) (held bool, err error) {
	switch out.Decision {
	case interceptors.Stop:
		return true, &errEnd{events.ReasonStopped, describe(out)}
	case interceptors.Deny:
		return true, r.toolAfter(ctx, call, denied(call, out), false)
	case interceptors.Mock:
		return true, r.toolAfter(ctx, call, mocked(call, out.Mock), false)
	case interceptors.Ask:
		return true, r.requestApproval(ctx, call, out.Plugin, out.Reason)
	}
	if need := r.eng.cfg.Approval.Required; need != nil && policy {
		if why := need(call); why != "" {
			return true, r.requestApproval(ctx, call, "", why)
		}
	}
	return false, nil
}

// isTask reports whether call calls a sub-agent.
func (r *run) isTask(call events.ToolCall) bool {
	return call.Name == TaskTool && len(r.eng.cfg.Subagents) > 0
}

// resumeCall carries on a call whose tool.before is recorded and whose
// tool.after is not: a worker stopped while it ran. What the tool.before
// hooks decided is applied as the record holds it (admit), and the
// approval policy asks when nothing of the call ran yet (the worker
// stopped before it asked); a raw result recorded (tool.result) goes
// through the tool.after hooks, a Task call goes on from its sub-agent's
// record; otherwise the outcome is unknown: an idempotent tool runs again,
// any other is reported to the model (and recorded) as "outcome unknown",
// never run twice.
func (r *run) resumeCall(ctx context.Context, st *runState, cs *record.Call) error {
	call := edited(cs.Before.Call, cs.Answer)
	out := allowed
	if d := st.Decisions[cs.BeforeID]; d != nil && cs.Request == nil { // an answered ask: the answer is acted on
		out = d
	}
	if held, err := r.admit(ctx, call, out, cs.Request == nil && !cs.Begun()); held {
		return err
	}
	if cs.Result != nil {
		return r.toolAfter(ctx, call, *cs.Result, false)
	}
	if r.isTask(call) {
		res, err := r.resumeSubagent(ctx, cs)
		if err != nil {
			return err
		}
		return r.toolAfter(ctx, call, res, true)
	}
	if t, ok := r.eng.tools[call.Name]; ok && t.Spec().Idempotent {
		r.eng.cfg.Logger.Info("loop: running an idempotent tool again after its worker stopped", "run", r.req.RunID, "tool", call.Name, "call", call.ID)
		return r.runTool(ctx, call)
	}
	why := "outcome unknown: the worker running this call stopped before its result was recorded, and the tool was not run again (it is not declared idempotent)"
	if err := r.emit(ctx, events.StageToolFailed, events.ToolFailed{Call: call, Error: why, Unknown: true}, call.Name); err != nil {
		return err
	}
	return r.toolAfter(ctx, call, errorResult(call, why), false)
}

// errorResult is the result that reports to the model, as an error, why
// call gave no output.
func errorResult(call events.ToolCall, why string) events.ToolResult {
	return events.ToolResult{CallID: call.ID, Name: call.Name, IsError: true, Content: "error: " + why}
}

func denied(call events.ToolCall, out *interceptors.ChainResult) events.ToolResult {
	return events.ToolResult{CallID: call.ID, Name: call.Name, IsError: true, Content: "denied: " + describe(out)}
}

func mocked(call events.ToolCall, m *events.ToolResult) events.ToolResult {
	var res events.ToolResult
	if m != nil {
		res = *m
	}
	res.CallID, res.Name, res.Mocked = call.ID, call.Name, true
	return res
}

// toolAfter records a call's result through tool.after. When the tool ran
// (ran) and tool.after hooks match, its raw result is recorded first, as
// tool.result, write-ahead: a worker that dies while the hooks run does not
// run the tool again. Without hooks, tool.after itself is written ahead.
// The hooks' context is added to the result the model is given.
func (r *run) toolAfter(ctx context.Context, call events.ToolCall, res events.ToolResult, ran bool) error {
	hooked := r.hooks != nil && r.hooks.MatchesCall(events.StageToolAfter, call.Name, call.Kind(), r.req.AgentID) > 0
	if ran && hooked {
		if err := r.emitSync(ctx, events.StageToolResult, events.ToolResultRecord{Call: call, Result: res}, call.Name); err != nil {
			return err
		}
	}
	ta, out, err := intercepted(ctx, r, stage{stage: events.StageToolAfter, subject: call.Name, kind: call.Kind(), sync: ran && !hooked},
		events.ToolAfter{Call: call, Result: res},
		func(p *events.ToolAfter, out *interceptors.ChainResult) bool {
			added := strings.Join(out.Context, "\n")
			if added == "" {
				return false
			}
			p.Context = joinContext(p.Context, added)
			return true
		})
	if err != nil {
		return err
	}
	r.messages = append(r.messages, toolMessage(&ta))
	if out.Decision == interceptors.Stop {
		return &errEnd{events.ReasonStopped, describe(out)}
	}
	return nil
}

// execTool runs the tool, turning errors and panics into an error result
// and a tool.failed event.
func (r *run) execTool(ctx context.Context, call events.ToolCall) events.ToolResult {
	start := time.Now()
	content, panicked, err := r.invoke(ctx, call)
	res := events.ToolResult{CallID: call.ID, Name: call.Name, Content: content, DurationMS: time.Since(start).Milliseconds()}
	if err == nil {
		return res
	}
	res.IsError, res.Content = true, "error: "+err.Error()
	if ctx.Err() != nil {
		return res // the run is interrupted: its end records the call's outcome
	}
	if perr := r.emit(ctx, events.StageToolFailed, events.ToolFailed{Call: call, Error: err.Error(), Panicked: panicked}, call.Name); perr != nil {
		r.eng.cfg.Logger.Warn("publish tool.failed", "run", r.req.RunID, "err", perr)
	}
	return res
}

// invoke calls the tool. Arguments that are not a JSON object (a model that
// sent invalid JSON, kept as a string by its provider) are an error for the
// model, and the tool is not called.
func (r *run) invoke(ctx context.Context, call events.ToolCall) (content string, panicked bool, err error) {
	t, ok := r.eng.tools[call.Name]
	if !ok {
		return "", false, fmt.Errorf("%w: %q", ErrUnknownTool, call.Name)
	}
	if a := bytes.TrimSpace(call.Arguments); len(a) > 0 && a[0] != '{' {
		return "", false, fmt.Errorf("%w: the arguments of %s are not a JSON object: %s", ErrToolArguments, call.Name, a)
	}
	return r.bounded(ctx, t, call)
}

// toolOutcome is what a tool's Call returned, or its panic.
type toolOutcome struct {
	content  string
	panicked bool
	err      error
}

// bounded calls the tool in a goroutine of its own, within the tool timeout
// (Config.ToolTimeout). When the call's ctx ends (the timeout, or the run's
// ctx), the tool has Config.ToolGrace to return (the Bash tool kills its
// processes meanwhile); a tool that does not, blocked in a system call that
// ignores its ctx, is abandoned: the call fails with ErrToolTimeout and the
// run goes on, while the tool's goroutine lingers until the call returns.
func (r *run) bounded(ctx context.Context, t Tool, call events.ToolCall) (string, bool, error) {
	timeout := r.eng.cfg.ToolTimeout
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan toolOutcome, 1) // never blocks an abandoned tool
	go func() {
		var o toolOutcome
		defer func() {
			if p := recover(); p != nil {
				o = toolOutcome{panicked: true, err: fmt.Errorf("tool %s panicked: %v", call.Name, p)}
				r.eng.cfg.Logger.Error("tool panicked", "tool", call.Name, "panic", p, "stack", string(debug.Stack()))
			}
			done <- o
		}()
		o.content, o.err = t.Call(cctx, call.Arguments)
	}()
	var o toolOutcome
	select {
	case o = <-done:
	case <-cctx.Done():
		grace := time.NewTimer(r.eng.cfg.ToolGrace)
		defer grace.Stop()
		select {
		case o = <-done:
		case <-grace.C:
			r.eng.cfg.Logger.Error("loop: tool abandoned: it did not return after its call's ctx ended; its goroutine lingers until the call returns",
				"run", r.req.RunID, "tool", call.Name, "call", call.ID, "timeout", timeout, "grace", r.eng.cfg.ToolGrace, "ctx", context.Cause(cctx))
			if ctx.Err() != nil {
				return "", false, fmt.Errorf("%w: %s did not return within %v of the run's end (%v) and was abandoned", ErrToolTimeout, call.Name, r.eng.cfg.ToolGrace, ctx.Err())
			}
			return "", false, fmt.Errorf("%w: %s did not finish within its timeout of %v and was abandoned", ErrToolTimeout, call.Name, timeout)
		}
	}
	if o.err != nil && ctx.Err() == nil && cctx.Err() != nil {
		o.err = fmt.Errorf("%w: %s did not finish within its timeout of %v: %w", ErrToolTimeout, call.Name, timeout, o.err)
	}
	return o.content, o.panicked, o.err
}

func joinContext(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n" + b
}
