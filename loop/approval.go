package loop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hookbus/hookbus/events"
)

// Durable human approval. A tool call that a tool.before hook answers ask
// about, or that the agent's policy says needs approval, is recorded with
// approval.requested (after its tool.before) instead of running. The step's
// other calls go on; then the attempt ends, the run waiting (Result.Reason
// ReasonWaiting): no worker holds it, nothing is kept in memory. An answer
// (RunRequest.Answer, from any client through the approval subject) resumes
// the run: the attempt records it as approval.resolved and, once every
// waiting call of the step has an answer, acts on them: approve runs the
// call, reject ends the run (run.completed reason rejected),
// reject_and_continue gives the reason to the model as the call's result.

// errAwaitApproval marks a call that waits for a human.
var errAwaitApproval = errors.New("loop: the call waits for approval")

// requestApproval records that call waits for a human's answer.
func (r *run) requestApproval(ctx context.Context, call events.ToolCall, plugin, reason string) error {
	pol := r.eng.cfg.Approval
	req := events.ApprovalRequested{Call: call, Plugin: plugin, Reason: reason,
		ExpiresAt: nowUTC().Add(pol.Expiry).Truncate(time.Second), OnExpiry: pol.OnExpiry}
	if err := r.emitSync(ctx, events.StageApprovalRequested, req, call.Name); err != nil {
		return err
	}
	r.waiting = append(r.waiting, req)
	return errAwaitApproval
}

// runCalls runs a step's calls in order; waiting reports whether any of
// them waits for approval (the others ran).
func (r *run) runCalls(ctx context.Context, calls []events.ToolCall) (waiting bool, err error) {
	for _, c := range calls {
		err := r.callTool(ctx, c)
		switch {
		case errors.Is(err, errAwaitApproval):
			waiting = true
		case err != nil:
			return false, err
		}
	}
	return waiting, nil
}

// wait ends the attempt with the run waiting for the answers to r.waiting,
// after everything it wrote is stored, and schedules its wake-up at the
// first expiry.
func (r *run) wait(ctx context.Context) (*Result, error) {
	if err := r.eng.cfg.Emitter.Flush(ctx, r.req.RunID); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnrecorded, err)
	}
	var first time.Time
	ids := make([]string, len(r.waiting))
	for i, w := range r.waiting {
		ids[i] = w.Call.ID
		if first.IsZero() || w.ExpiresAt.Before(first) {
			first = w.ExpiresAt
		}
	}
	if wk := r.eng.cfg.Waker; wk != nil && !first.IsZero() {
		wake := &events.RunRequest{RunID: r.req.RunID, AgentID: r.req.AgentID, SessionID: r.req.SessionID,
			Answer: &events.ApprovalAnswer{Action: events.ActionExpire, By: "hookbus", AnswerID: events.NewID(), AnsweredAt: first}}
		if err := wk.WakeAt(ctx, wake, first); err != nil {
			// The expiry then takes effect when the run is next resumed.
			r.eng.cfg.Logger.Warn("loop: the wake-up at the approval's expiry was not scheduled", "run", r.req.RunID, "at", first, "err", err)
		}
	}
	return &Result{
		RunID: r.req.RunID, AgentID: r.req.AgentID, SessionID: r.req.SessionID,
		Reason: ReasonWaiting, Detail: "waiting for approval of " + strings.Join(ids, ", "),
		Answer: r.answer, Steps: r.step, Usage: r.usage, Events: r.events, Resumed: r.resumed,
		Waiting: slices.Clone(r.waiting),
	}, nil
}

// checkAnswer refuses, before anything is written, an answer the run cannot
// take: no such run, a run that ended, a call that does not wait for an
// answer or has one. An expiry is taken whenever the run waits.
func checkAnswer(req *events.RunRequest, st *runState) error {
	a := req.Answer
	switch {
	case !st.found:
		return fmt.Errorf("%w: run %s of %s/%s has no events", ErrBadAnswer, req.RunID, req.AgentID, req.SessionID)
	case st.terminal != nil:
		return fmt.Errorf("%w: run %s has ended (%s)", ErrBadAnswer, req.RunID, st.terminal.Stage)
	case a.Action == events.ActionExpire:
		return nil
	}
	cs := st.calls[a.CallID]
	switch {
	case cs == nil || cs.approval == nil:
		return fmt.Errorf("%w: run %s has no call %s waiting for approval", ErrBadAnswer, req.RunID, a.CallID)
	case cs.resolution != nil:
		return fmt.Errorf("%w: call %s of run %s was answered already (%s by %s)", ErrBadAnswer, a.CallID, req.RunID, cs.resolution.Action, cs.resolution.By)
	}
	return nil
}

// recordAnswers records the request's answer, and resolves by their policy
// the requests past their expiry, each as approval.resolved.
func (r *run) recordAnswers(ctx context.Context, st *runState) error {
	now := nowUTC()
	if a := r.req.Answer; a != nil && a.Action != events.ActionExpire {
		if err := checkAnswer(r.req, st); err != nil {
			return err // answered meanwhile by another attempt
		}
		at := a.AnsweredAt
		if at.IsZero() {
			at = now
		}
		res := events.ApprovalResolved{CallID: a.CallID, Approved: a.Action == events.ActionApprove, Action: a.Action,
			By: a.By, Reason: a.Reason, Comment: a.Comment, AnswerID: a.AnswerID, AnsweredAt: at}
		if err := r.resolve(ctx, st.calls[a.CallID], res); err != nil {
			return err
		}
	}
	for _, cs := range st.waiting() {
		if ex := cs.approval.ExpiresAt; !ex.IsZero() && !now.Before(ex) {
			res := events.ApprovalResolved{CallID: cs.approval.Call.ID, Approved: cs.approval.OnExpiry == events.ActionApprove,
				Action: cs.approval.OnExpiry, By: "hookbus", Expired: true, AnsweredAt: now,
				Reason: "no answer by " + ex.Format(time.RFC3339)}
			if r.req.Answer != nil && r.req.Answer.Action == events.ActionExpire {
				res.AnswerID = r.req.Answer.AnswerID
			}
			if err := r.resolve(ctx, cs, res); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *run) resolve(ctx context.Context, cs *callState, res events.ApprovalResolved) error {
	if err := r.emitSync(ctx, events.StageApprovalResolved, res, cs.approval.Call.Name); err != nil {
		return err
	}
	cs.resolution, cs.resolvedSeq = &res, r.seq
	return nil
}

// actOnAnswer carries on a call whose approval is answered: approve runs
// it (as it was when approval was requested), reject ends the run,
// reject_and_continue gives the reason to the model. earlier is set when
// every approval of the step was answered before this attempt: an earlier
// attempt went on with the step and may have started the approved tool,
// whose outcome is then handled as unknown.
func (r *run) actOnAnswer(ctx context.Context, st *runState, cs *callState, earlier bool) error {
	call, res := cs.approval.Call, cs.resolution
	why := res.Reason
	if why == "" {
		why = "no reason given"
	}
	who := res.By
	if who == "" {
		who = "a human"
	}
	switch res.Action {
	case events.ActionReject:
		return &errEnd{events.ReasonRejected, fmt.Sprintf("call %s (%s) rejected by %s: %s", call.ID, call.Name, who, why)}
	case events.ActionRejectAndContinue:
		return r.toolAfter(ctx, call, events.ToolResult{CallID: call.ID, Name: call.Name, IsError: true,
			Content: fmt.Sprintf("rejected by %s: %s", who, why)}, false)
	}
	if earlier {
		return r.resumeCall(ctx, st, cs)
	}
	out := r.execTool(ctx, call)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return r.toolAfter(ctx, call, out, true)
}
