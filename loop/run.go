package loop

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

func nowUTC() time.Time { return time.Now().UTC() }

// run is one execution of a run request.
type run struct {
	eng      *Engine
	req      *events.RunRequest
	maxSteps int

	hooks     Interception
	fence     *bus.Fence // the attempt's claim on the session (with a Fencer)
	seq       uint64
	step      int
	events    int
	usage     events.Usage
	continues int
	messages  []events.Message
	answer    string
	resumed   bool
}

// errEnd carries an early end of the run (denied, stopped) up the stack.
type errEnd struct{ reason, detail string }

func (e *errEnd) Error() string { return e.reason + ": " + e.detail }

func (r *run) execute(ctx context.Context) (*Result, error) {
	res, err := r.attempt(ctx)
	if errors.Is(err, bus.ErrFenced) {
		return r.lost(ctx, err)
	}
	return res, err
}

// lost ends an attempt whose session another attempt claimed: it writes
// nothing ahead any more. If the claim is another run's, this run's end is
// recorded (run.failed, unfenced: it starts nothing) so nobody waits for it;
// if it is another attempt of this run, that attempt ends the run.
func (r *run) lost(ctx context.Context, cause error) (*Result, error) {
	res := &Result{
		RunID: r.req.RunID, AgentID: r.req.AgentID, SessionID: r.req.SessionID,
		Reason: ReasonFailed, Detail: cause.Error(), Steps: r.step, Usage: r.usage, Events: r.events, Resumed: r.resumed,
	}
	var fenced *bus.FencedError
	if !errors.As(cause, &fenced) || fenced.By.RunID == r.req.RunID {
		r.eng.cfg.Logger.Warn("loop: run taken over by another attempt", "run", r.req.RunID, "err", cause)
		return res, fmt.Errorf("%w: %w", ErrLostRun, cause)
	}
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	r.fence = nil
	why := fmt.Sprintf("session %s/%s taken over by run %s (one writer per session)", r.req.AgentID, r.req.SessionID, fenced.By.RunID)
	if _, err := r.emit(c, events.StageRunFailed, events.RunFailed{Error: why, Steps: r.step}, "", true); err != nil {
		return res, errors.Join(cause, err)
	}
	res.Detail, res.Events, res.Ended = why, r.events, true
	return res, fmt.Errorf("loop: %s: %w", why, cause)
}

// attempt rebuilds the session and runs the request from where its events
// say it is.
func (r *run) attempt(ctx context.Context) (*Result, error) {
	var st *runState
	if h := r.eng.cfg.History; h != nil {
		evs, err := h.SessionEvents(ctx, r.req.AgentID, r.req.SessionID)
		if err != nil {
			return nil, fmt.Errorf("loop: rebuild session %s/%s: %w", r.req.AgentID, r.req.SessionID, err)
		}
		sess, rs, err := rebuild(evs, r.req.RunID)
		if err != nil {
			return nil, err
		}
		for _, err := range sess.Skipped {
			r.eng.cfg.Logger.Warn("loop: session event skipped", "agent", r.req.AgentID, "session", r.req.SessionID, "err", err)
		}
		if rs.terminal != nil {
			return resultOf(r.req, rs.terminal, rs.events), nil
		}
		r.messages = sess.Messages
		if rs.found {
			st = rs
		}
	}
	res, err := r.body(ctx, st)
	if err == nil {
		return res, nil
	}
	var end *errEnd
	if errors.As(err, &end) {
		return r.finish(ctx, end.reason, end.detail)
	}
	if errors.Is(err, bus.ErrFenced) {
		return nil, err // lost: nothing more is written ahead (execute)
	}
	if ctx.Err() != nil {
		// The caller gave up: record it, on a context that still works.
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		return r.finish(c, events.ReasonInterrupted, ctx.Err().Error())
	}
	return r.fail(ctx, err)
}

// body runs the run from where its events say it is (st nil: from the start).
func (r *run) body(ctx context.Context, st *runState) (*Result, error) {
	prompt := r.req.Prompt
	resumeStep := 0
	var pending *events.ModelResponded
	if st != nil {
		r.resumed = true
		r.seq, r.usage, r.continues = st.lastSeq, st.usage, st.continues
		r.events = st.events
		if st.intake != nil {
			prompt = st.intake.Prompt
		}
		r.step = st.stepDone
		if st.responded != nil && st.respStep > st.stepDone {
			pending, resumeStep = st.responded, st.respStep
		}
	}
	if st == nil || st.intake == nil {
		ev, err := r.event(events.StageIntake, events.Intake{Prompt: prompt, Metadata: r.req.Metadata}, "")
		if err != nil {
			return nil, err
		}
		v, err := r.intercept(ctx, ev)
		if err != nil {
			return nil, err
		}
		var in events.Intake
		if err := ev.DecodeData(&in); err != nil {
			return nil, err
		}
		prompt = in.Prompt
		if err := r.publish(ctx, ev, false); err != nil {
			return nil, err
		}
		if v.kind == interceptors.Deny || v.kind == interceptors.Stop {
			return nil, &errEnd{events.ReasonRejected, v.describe()}
		}
	}
	history := 0
	if st == nil || !st.started {
		r.messages = append(r.messages, events.Message{Role: events.RoleUser, Content: prompt})
		history = len(r.messages) - 1
	} else {
		history = st.history
	}
	// Every attempt starts with run.started: a resumed one says so, and the
	// record shows where a worker took the run over.
	started, err := r.event(events.StageRunStarted, events.RunStarted{
		Prompt: prompt, HistoryMessages: history, Resumed: r.resumed, MaxSteps: r.maxSteps,
	}, "")
	if err != nil {
		return nil, err
	}
	if err := r.claim(ctx, started); err != nil {
		return nil, err
	}
	if st != nil && st.answered() {
		// The last step's reply is the answer; only the run's end is
		// missing. End it without asking the model again.
		r.answer = st.responded.Message.Content
		if st.stopStep != st.stepDone {
			return r.stop(ctx)
		}
		if st.stopHook != nil { // a stop hook ended it
			return nil, &errEnd{events.ReasonStopped, describeDecided(st.stopHook)}
		}
		return r.finish(ctx, events.ReasonDone, "")
	}
	if pending != nil && st.respEnd != nil {
		// A hook ended the run on this reply before the worker stopped: its
		// tool calls never run.
		r.step = resumeStep
		return nil, st.respEnd
	}
	if pending != nil {
		r.step = resumeStep
		var calls []events.ToolCall
		for _, c := range pending.Message.ToolCalls {
			if !st.afterIDs[c.ID] {
				calls = append(calls, c)
			}
		}
		r.answer = pending.Message.Content
		done, err := r.afterModel(ctx, calls, len(pending.Message.ToolCalls), pending.Usage)
		if err != nil || done != nil {
			return done, err
		}
	}
	for {
		if r.step >= r.maxSteps {
			return nil, &errEnd{events.ReasonMaxSteps, fmt.Sprintf("%d steps", r.maxSteps)}
		}
		r.step++
		done, err := r.doStep(ctx)
		if err != nil || done != nil {
			return done, err
		}
	}
}

// doStep runs one step; it returns a result when the run is over.
func (r *run) doStep(ctx context.Context) (*Result, error) {
	ev, err := r.event(events.StageStepStarted, events.StepStarted{Step: r.step}, "")
	if err != nil {
		return nil, err
	}
	v, err := r.intercept(ctx, ev)
	if err != nil {
		return nil, err
	}
	if err := r.publish(ctx, ev, false); err != nil {
		return nil, err
	}
	if v.kind == interceptors.Stop {
		return nil, &errEnd{events.ReasonStopped, v.describe()}
	}

	// context.assembled: what the model is about to see.
	msgs := r.messages
	if sp := r.eng.cfg.SystemPrompt; sp != "" {
		msgs = append([]events.Message{{Role: events.RoleSystem, Content: sp}}, msgs...)
	}
	ev, err = r.event(events.StageContextAssembled, events.ContextAssembled{Messages: msgs, Tools: r.eng.specs}, "")
	if err != nil {
		return nil, err
	}
	if v, err = r.intercept(ctx, ev); err != nil {
		return nil, err
	}
	var ca events.ContextAssembled
	if err := ev.DecodeData(&ca); err != nil {
		return nil, err
	}
	if err := r.publish(ctx, ev, false); err != nil {
		return nil, err
	}
	if end := endOf(v); end != nil {
		return nil, end
	}

	resp, err := r.eng.cfg.Model.Generate(ctx, &ModelRequest{
		AgentID: r.req.AgentID, RunID: r.req.RunID, Step: r.step, Messages: ca.Messages, Tools: ca.Tools,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if _, perr := r.emit(ctx, events.StageModelFailed, events.ModelFailed{Error: err.Error()}, "", false); perr != nil {
			return nil, errors.Join(err, perr)
		}
		return nil, fmt.Errorf("model: %w", err)
	}
	r.usage = r.usage.Add(resp.Usage)

	ev, err = r.event(events.StageModelResponded, events.ModelResponded{
		Message: resp.Message, Usage: resp.Usage, FinishReason: resp.FinishReason, Model: resp.Model,
	}, "")
	if err != nil {
		return nil, err
	}
	if v, err = r.intercept(ctx, ev); err != nil {
		return nil, err
	}
	var mr events.ModelResponded
	if err := ev.DecodeData(&mr); err != nil {
		return nil, err
	}
	if err := r.publish(ctx, ev, false); err != nil {
		return nil, err
	}
	if end := endOf(v); end != nil {
		return nil, end
	}
	mr.Message.Role = events.RoleAssistant
	r.messages = append(r.messages, mr.Message)
	r.answer = mr.Message.Content
	return r.afterModel(ctx, mr.Message.ToolCalls, len(mr.Message.ToolCalls), resp.Usage)
}

// afterModel runs the step's tool calls, completes the step, and at a reply
// without tool calls asks the stop hooks whether the run ends.
func (r *run) afterModel(ctx context.Context, calls []events.ToolCall, total int, usage events.Usage) (*Result, error) {
	for _, c := range calls {
		if err := r.callTool(ctx, c); err != nil {
			return nil, err
		}
	}
	if _, err := r.emit(ctx, events.StageStepCompleted, events.StepCompleted{Step: r.step, ToolCalls: total, Usage: usage}, "", false); err != nil {
		return nil, err
	}
	if total > 0 {
		return nil, nil
	}
	return r.stop(ctx)
}

// stop asks the stop hooks whether the run ends with r.answer, and ends it
// or (a hook's continue) returns nil to go on.
func (r *run) stop(ctx context.Context) (*Result, error) {
	ev, err := r.event(events.StageStop, events.Stop{Reason: events.ReasonDone, Answer: r.answer, Continues: r.continues}, "")
	if err != nil {
		return nil, err
	}
	v, err := r.intercept(ctx, ev)
	if err != nil {
		return nil, err
	}
	if v.kind == interceptors.Continue && r.continues < r.eng.cfg.MaxContinues {
		msg := v.context
		if msg == "" {
			msg = v.reason
		}
		r.continues++
		if err := r.republish(ctx, ev, events.Stop{Reason: events.ReasonDone, Answer: r.answer, Continues: r.continues, Continue: msg, Plugin: v.plugin}); err != nil {
			return nil, err
		}
		r.messages = append(r.messages, continueMessage(msg))
		return nil, nil
	}
	if err := r.publish(ctx, ev, false); err != nil {
		return nil, err
	}
	if v.kind == interceptors.Stop {
		return nil, &errEnd{events.ReasonStopped, v.describe()}
	}
	return r.finish(ctx, events.ReasonDone, "")
}

// callTool runs one tool call through tool.before and tool.after.
func (r *run) callTool(ctx context.Context, call events.ToolCall) error {
	ev, err := r.event(events.StageToolBefore, events.ToolBefore{Call: call}, call.Name)
	if err != nil {
		return err
	}
	v, err := r.intercept(ctx, ev)
	if err != nil {
		return err
	}
	var tb events.ToolBefore
	if err := ev.DecodeData(&tb); err != nil {
		return err
	}
	call = tb.Call
	// Write-ahead: the stream has tool.before before the tool runs.
	if err := r.publish(ctx, ev, true); err != nil {
		return err
	}
	var result events.ToolResult
	switch v.kind {
	case interceptors.Stop:
		return &errEnd{events.ReasonStopped, v.describe()}
	case interceptors.Deny:
		result = events.ToolResult{CallID: call.ID, Name: call.Name, IsError: true, Content: "denied: " + v.describe()}
		after := events.ToolAfter{Call: call, Result: result}
		if _, err := r.emit(ctx, events.StageToolAfter, after, call.Name, false); err != nil {
			return err
		}
		r.messages = append(r.messages, toolMessage(&after))
		return nil
	case interceptors.Mock:
		result = *v.mock
		result.CallID, result.Name, result.Mocked = call.ID, call.Name, true
	default:
		result = r.execTool(ctx, call)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	ev, err = r.event(events.StageToolAfter, events.ToolAfter{Call: call, Result: result}, call.Name)
	if err != nil {
		return err
	}
	if v, err = r.intercept(ctx, ev); err != nil {
		return err
	}
	var ta events.ToolAfter
	if err := ev.DecodeData(&ta); err != nil {
		return err
	}
	if v.context != "" {
		ta.Context = joinContext(ta.Context, v.context)
		if ev.Data, err = marshal(ta); err != nil {
			return err
		}
	}
	if err := r.publish(ctx, ev, false); err != nil {
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
	if err != nil {
		res.IsError, res.Content = true, "error: "+err.Error()
		if _, perr := r.emit(ctx, events.StageToolFailed, events.ToolFailed{Call: call, Error: err.Error(), Panicked: panicked}, call.Name, false); perr != nil {
			r.eng.cfg.Logger.Warn("publish tool.failed", "run", r.req.RunID, "err", perr)
		}
	}
	return res
}

func (r *run) invoke(ctx context.Context, call events.ToolCall) (content string, panicked bool, err error) {
	t, ok := r.eng.tools[call.Name]
	if !ok {
		return "", false, fmt.Errorf("%w: %q", ErrUnknownTool, call.Name)
	}
	defer func() {
		if p := recover(); p != nil {
			panicked = true
			err = fmt.Errorf("tool %s panicked: %v", call.Name, p)
			r.eng.cfg.Logger.Error("tool panicked", "tool", call.Name, "panic", p, "stack", string(debug.Stack()))
		}
	}()
	content, err = t.Call(ctx, call.Arguments)
	return content, false, err
}

// finish ends the run with run.completed, published after every earlier
// event of the run is acknowledged.
func (r *run) finish(ctx context.Context, reason, detail string) (*Result, error) {
	if err := r.eng.cfg.Emitter.Flush(ctx, r.req.RunID); err != nil {
		return r.fail(ctx, fmt.Errorf("flush before run.completed: %w", err))
	}
	rc := events.RunCompleted{Reason: reason, Answer: r.answer, Detail: detail, Steps: r.step, Usage: r.usage, Events: r.events}
	if reason != events.ReasonDone && reason != events.ReasonMaxSteps {
		rc.Answer = ""
	}
	if _, err := r.emit(ctx, events.StageRunCompleted, rc, "", true); err != nil {
		return nil, fmt.Errorf("loop: publish run.completed of run %s: %w", r.req.RunID, err)
	}
	return &Result{
		RunID: r.req.RunID, AgentID: r.req.AgentID, SessionID: r.req.SessionID,
		Reason: reason, Detail: detail, Answer: rc.Answer, Steps: r.step, Usage: r.usage,
		Events: r.events, Resumed: r.resumed, Ended: true,
	}, nil
}

// fail ends the run with run.failed and returns cause.
func (r *run) fail(ctx context.Context, cause error) (*Result, error) {
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	ferr := r.eng.cfg.Emitter.Flush(c, r.req.RunID)
	res := &Result{
		RunID: r.req.RunID, AgentID: r.req.AgentID, SessionID: r.req.SessionID,
		Reason: ReasonFailed, Detail: cause.Error(), Steps: r.step, Usage: r.usage, Resumed: r.resumed,
	}
	if _, err := r.emit(c, events.StageRunFailed, events.RunFailed{Error: cause.Error(), Steps: r.step}, "", true); err != nil {
		return res, errors.Join(cause, ferr, fmt.Errorf("publish run.failed: %w", err))
	}
	res.Events, res.Ended = r.events, true
	return res, errors.Join(cause, ferr)
}

// resultOf reads the result of a run that already ended.
func resultOf(req *events.RunRequest, term *events.Event, n int) *Result {
	res := &Result{RunID: req.RunID, AgentID: req.AgentID, SessionID: req.SessionID, Events: n, Steps: term.Step, Ended: true}
	if term.Stage == events.StageRunFailed {
		var p events.RunFailed
		_ = term.DecodeData(&p)
		res.Reason, res.Detail, res.Steps = ReasonFailed, p.Error, p.Steps
		return res
	}
	var p events.RunCompleted
	_ = term.DecodeData(&p)
	res.Reason, res.Detail, res.Answer, res.Steps, res.Usage = p.Reason, p.Detail, p.Answer, p.Steps, p.Usage
	return res
}

// describeDecided describes a recorded hook decision as verdict.describe
// does a live one.
func describeDecided(d *events.HookDecided) string {
	return verdict{kind: interceptors.Kind(d.Decision), reason: d.Reason, plugin: d.Plugin}.describe()
}

func endOf(v verdict) *errEnd {
	switch v.kind {
	case interceptors.Deny:
		return &errEnd{events.ReasonDenied, v.describe()}
	case interceptors.Stop:
		return &errEnd{events.ReasonStopped, v.describe()}
	}
	return nil
}

func (v verdict) describe() string {
	s := v.reason
	if s == "" {
		s = string(v.kind)
	}
	if v.plugin != "" {
		s = v.plugin + ": " + s
	}
	return s
}

func joinContext(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n" + b
}
