package loop

import (
	"bytes"
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// callTool runs one tool call through tool.before (write-ahead: the record
// has it before the tool runs) and tool.after.
func (r *run) callTool(ctx context.Context, call events.ToolCall) error {
	tb, v, err := intercepted(ctx, r, stage{stage: events.StageToolBefore, subject: call.Name, sync: true}, events.ToolBefore{Call: call}, nil)
	if err != nil {
		return err
	}
	call = tb.Call
	switch v.kind {
	case interceptors.Stop:
		return &errEnd{events.ReasonStopped, v.describe()}
	case interceptors.Deny:
		return r.toolAfter(ctx, call, denied(call, v), false)
	case interceptors.Mock:
		return r.toolAfter(ctx, call, mocked(call, v.mock), false)
	case interceptors.Ask:
		return r.requestApproval(ctx, call, v.plugin, v.reason)
	}
	if need := r.eng.cfg.Approval.Required; need != nil {
		if why := need(call); why != "" {
			return r.requestApproval(ctx, call, "", why)
		}
	}
	if r.isTask(call) {
		res, err := r.callSubagent(ctx, call)
		if err != nil {
			return err
		}
		return r.toolAfter(ctx, call, res, true)
	}
	res := r.execTool(ctx, call)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return r.toolAfter(ctx, call, res, true)
}

// isTask reports whether call calls a sub-agent.
func (r *run) isTask(call events.ToolCall) bool {
	return call.Name == TaskTool && len(r.eng.cfg.Subagents) > 0
}

// resumeCall carries on a call whose tool.before is recorded and whose
// tool.after is not: a worker stopped while it ran. A decision recorded on
// the tool.before (deny, mock, stop) is taken as it was; a raw result
// recorded (tool.result) goes through the tool.after hooks; otherwise the
// outcome is unknown: an idempotent tool runs again, any other is reported
// to the model (and recorded) as "outcome unknown", never run twice.
func (r *run) resumeCall(ctx context.Context, st *runState, cs *callState) error {
	call := edited(cs.before.Call, cs.resolution)
	if d := st.ends[cs.beforeID]; d != nil && cs.approval == nil {
		v := stageAction{kind: interceptors.Kind(d.Decision), reason: d.Reason, plugin: d.Plugin, mock: d.Result}
		switch v.kind {
		case interceptors.Stop:
			return &errEnd{events.ReasonStopped, v.describe()}
		case interceptors.Ask:
			// The worker stopped between the hook's ask and the request.
			return r.requestApproval(ctx, call, v.plugin, v.reason)
		case interceptors.Deny:
			return r.toolAfter(ctx, call, denied(call, v), false)
		case interceptors.Mock:
			return r.toolAfter(ctx, call, mocked(call, v.mock), false)
		}
	}
	if cs.result != nil {
		return r.toolAfter(ctx, call, *cs.result, false)
	}
	if r.isTask(call) {
		res, err := r.resumeSubagent(ctx, cs)
		if err != nil {
			return err
		}
		return r.toolAfter(ctx, call, res, true)
	}
	if need := r.eng.cfg.Approval.Required; need != nil && cs.approval == nil {
		if why := need(call); why != "" {
			// The worker stopped before it asked: the tool did not run.
			return r.requestApproval(ctx, call, "", why)
		}
	}
	if t, ok := r.eng.tools[call.Name]; ok && t.Spec().Idempotent {
		r.eng.cfg.Logger.Info("loop: running an idempotent tool again after its worker stopped", "run", r.req.RunID, "tool", call.Name, "call", call.ID)
		res := r.execTool(ctx, call)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return r.toolAfter(ctx, call, res, true)
	}
	why := "outcome unknown: the worker running this call stopped before its result was recorded, and the tool was not run again (it is not declared idempotent)"
	if err := r.emit(ctx, events.StageToolFailed, events.ToolFailed{Call: call, Error: why, Unknown: true}, call.Name); err != nil {
		return err
	}
	return r.toolAfter(ctx, call, events.ToolResult{CallID: call.ID, Name: call.Name, IsError: true, Content: "error: " + why}, false)
}

func denied(call events.ToolCall, v stageAction) events.ToolResult {
	return events.ToolResult{CallID: call.ID, Name: call.Name, IsError: true, Content: "denied: " + v.describe()}
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
	hooked := r.hooks != nil && r.hooks.Matches(events.StageToolAfter, call.Name, r.req.AgentID) > 0
	if ran && hooked {
		if err := r.emitSync(ctx, events.StageToolResult, events.ToolResultRecord{Call: call, Result: res}, call.Name); err != nil {
			return err
		}
	}
	ta, v, err := intercepted(ctx, r, stage{stage: events.StageToolAfter, subject: call.Name, sync: ran && !hooked},
		events.ToolAfter{Call: call, Result: res},
		func(p *events.ToolAfter, v stageAction) bool {
			if v.context == "" {
				return false
			}
			p.Context = joinContext(p.Context, v.context)
			return true
		})
	if err != nil {
		return err
	}
	r.messages = append(r.messages, toolMessage(&ta))
	if v.kind == interceptors.Stop {
		return &errEnd{events.ReasonStopped, v.describe()}
	}
	return nil
}

// execTool runs the tool, turning errors and panics into an error result
// and a tool.failed event.
func (r *run) execTool(ctx context.Context, call events.ToolCall) events.ToolResult {
	start := time.Now()
	content, panicked, err := r.invoke(ctx, call)
	res := events.ToolResult{CallID: call.ID, Name: call.Name, Content: content, DurationMS: time.Since(start).Milliseconds()}
	if err != nil && ctx.Err() != nil {
		// The run is interrupted: its end records the call's outcome.
		res.IsError, res.Content = true, "error: "+err.Error()
		return res
	}
	if err != nil {
		res.IsError, res.Content = true, "error: "+err.Error()
		if perr := r.emit(ctx, events.StageToolFailed, events.ToolFailed{Call: call, Error: err.Error(), Panicked: panicked}, call.Name); perr != nil {
			r.eng.cfg.Logger.Warn("publish tool.failed", "run", r.req.RunID, "err", perr)
		}
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
