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
	if wk := r.eng.cfg.Queue; wk != nil && !first.IsZero() {
		wake := &events.RunRequest{RunID: r.req.RunID, AgentID: r.req.AgentID, SessionID: r.req.SessionID,
			Answer: &events.ApprovalAnswer{Action: events.ActionExpire, By: "hookbus", AnswerID: events.NewID(), AnsweredAt: first}}
		if err := wk.WakeAt(ctx, wake, first); err != nil {
			// The expiry then takes effect when the run is next resumed.
			r.eng.cfg.Logger.Warn("loop: the wake-up at the approval's expiry was not scheduled", "run", r.req.RunID, "at", first, "err", err)
		}
	}
	detail := "waiting for approval of " + strings.Join(ids, ", ")
	if len(ids) == 0 {
		detail = "waiting for a sub-agent that waits for approval"
	}
	return &Result{
		RunID: r.req.RunID, AgentID: r.req.AgentID, SessionID: r.req.SessionID,
		Reason: ReasonWaiting, Detail: detail,
		Answer: r.answer, Steps: r.step, Usage: r.usage, Events: r.events, Resumed: r.resumed,
		Waiting: slices.Clone(r.waiting),
	}, nil
}

// Answer records a human's answer to one of a waiting run's calls (or, for
// an answer with action events.ActionExpire, resolves by its policy every
// request past its expiry) as approval.resolved, and once every call of the
// step waiting has an answer, queues the run's resumption (Config.Queue).
// It is what a worker does with a message of the approval subject; answers
// must be taken one at a time, in the order they came (bus.ConsumeRuns
// does).
//
// The answer is appended on the run's last claim, after its last event: the
// run waits, so no attempt writes to it. An answer the run cannot take is
// refused, nothing written: an error wrapping ErrBadAnswer naming the run,
// or the call and who answered it first. A failure to record wraps
// ErrUnrecorded.
func (e *Engine) Answer(ctx context.Context, req *events.RunRequest) (*AnswerResult, error) {
	if req == nil || req.Answer == nil {
		return nil, fmt.Errorf("%w: no answer", ErrInvalidRequest)
	}
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	r := &run{eng: e, req: req}
	for tries := 0; ; tries++ {
		res, err := r.takeAnswer(ctx)
		var c Claimed
		if err != nil && errors.As(err, &c) && tries < maxStaleReads {
			continue // the run moved on meanwhile: read it again
		}
		return res, err
	}
}

// AnswerResult is what an answer did.
type AnswerResult struct {
	// Resolved are the approval.resolved recorded.
	Resolved []events.ApprovalResolved
	// Waiting are the calls of the step still waiting for an answer.
	Waiting []events.ApprovalRequested
	// Resumed is set when the run's resumption was queued.
	Resumed bool
}

func (r *run) takeAnswer(ctx context.Context) (*AnswerResult, error) {
	_, st, err := r.read(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkAnswer(r.req, st); err != nil {
		return nil, err
	}
	last, err := r.lastClaim(ctx)
	if err != nil {
		return nil, err
	}
	r.claim, r.seq, r.step, r.prevHash = last, st.lastSeq, st.respStep, st.lastHash
	out := &AnswerResult{}
	now := nowUTC()
	if a := r.req.Answer; a.Action != events.ActionExpire {
		at := a.AnsweredAt
		if at.IsZero() {
			at = now
		}
		res := events.ApprovalResolved{CallID: a.CallID, Approved: a.Action == events.ActionApprove, Action: a.Action,
			By: a.By, Reason: a.Reason, Comment: a.Comment, AnswerID: a.AnswerID, AnsweredAt: at}
		if err := r.resolve(ctx, st.calls[a.CallID], res); err != nil {
			return nil, err
		}
		out.Resolved = append(out.Resolved, res)
	}
	for _, cs := range st.waiting() {
		if ex := cs.approval.ExpiresAt; !ex.IsZero() && !now.Before(ex) {
			res := events.ApprovalResolved{CallID: cs.approval.Call.ID, Approved: cs.approval.OnExpiry == events.ActionApprove,
				Action: cs.approval.OnExpiry, By: "hookbus", Expired: true, AnsweredAt: now,
				Reason: "no answer by " + ex.Format(time.RFC3339), AnswerID: r.req.Answer.AnswerID}
			if err := r.resolve(ctx, cs, res); err != nil {
				return nil, err
			}
			out.Resolved = append(out.Resolved, res)
		}
	}
	for _, cs := range st.waiting() {
		out.Waiting = append(out.Waiting, *cs.approval)
	}
	if len(out.Resolved) > 0 && len(out.Waiting) == 0 {
		if q := r.eng.cfg.Queue; q != nil {
			resume := &events.RunRequest{RunID: r.req.RunID, AgentID: r.req.AgentID, SessionID: r.req.SessionID, Resume: true,
				Definition: st.definitionDigest()}
			if err := q.Resume(ctx, resume, "resume."+r.req.RunID+"."+r.req.Answer.AnswerID); err != nil {
				return out, fmt.Errorf("%w: queue the resumption of run %s: %w", ErrUnrecorded, r.req.RunID, err)
			}
			out.Resumed = true
		}
	}
	return out, nil
}

// lastClaim is the stream sequence of the session's last run.started.
func (r *run) lastClaim(ctx context.Context) (uint64, error) {
	evs, err := r.eng.cfg.History.SessionEvents(ctx, r.req.AgentID, r.req.SessionID)
	if err != nil {
		return 0, fmt.Errorf("%w: read session %s/%s: %w", ErrUnrecorded, r.req.AgentID, r.req.SessionID, err)
	}
	var last uint64
	for _, e := range evs {
		if e.Stage == events.StageRunStarted && e.Stored > last {
			last = e.Stored
		}
	}
	return last, nil
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
