package loop

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/record"
)

// Durable human approval. A tool call that a tool.before hook answers ask
// about, or that the agent's policy says needs approval, is recorded with
// approval.requested (after its tool.before) instead of running. The step's
// other calls go on; then the attempt ends, the run waiting (Result.Reason
// ReasonWaiting): no worker holds it, nothing is kept in memory. Whoever
// answers records approval.resolved in the run's record (approval.Answer);
// at the first expiry of the step's requests a wake-up (Config.Queue)
// records the expiry the same way (Resumer.Due). Once every waiting call
// of the step has an answer, workers queue the run's resumption
// (Resumer.Resolved), and the attempt that takes it acts on the answers:
// approve runs the call, reject ends the run (run.completed reason
// rejected), reject_and_continue gives the reason to the model as the
// call's result.

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

// wait ends the attempt with the run waiting for the answers to r.waiting,
// after everything it wrote is stored, and schedules its wake-up at the
// first expiry. When the wake-up cannot be scheduled, the attempt does not
// end (ErrUnrecorded): the run is attempted again, and that attempt
// schedules it.
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
		wake := events.Wake{RunID: r.req.RunID, AgentID: r.req.AgentID, SessionID: r.req.SessionID, At: first}
		if err := wk.WakeAt(ctx, wake); err != nil {
			// Without it the expiry would never take effect: the attempt
			// does not end, and the next attempt (the request delivered
			// again) schedules it.
			r.eng.cfg.Logger.Warn("loop: the wake-up at the approval's expiry was not scheduled; the run's request goes back to the queue", "run", r.req.RunID, "at", first, "err", err)
			return nil, fmt.Errorf("%w: the wake-up of run %s at its approvals' expiry %s: %w", ErrUnrecorded, r.req.RunID, first.Format(time.RFC3339), err)
		}
	}
	detail := "waiting for approval of " + strings.Join(ids, ", ")
	if len(ids) == 0 {
		detail = "waiting for a sub-agent that waits for approval"
	}
	res := r.result(ReasonWaiting, detail)
	res.Answer, res.Waiting = r.answer, slices.Clone(r.waiting)
	return res, nil
}

// actOnAnswer carries on a call whose approval is answered: approve runs
// it (as it was when approval was requested), reject ends the run,
// reject_and_continue gives the reason to the model. earlier is set when
// every approval of the step was answered before this attempt: an earlier
// attempt went on with the step and may have started the approved tool,
// whose outcome is then handled as unknown.
func (r *run) actOnAnswer(ctx context.Context, st *runState, cs *record.Call, earlier bool) error {
	call, res := edited(cs.Request.Call, cs.Answer), cs.Answer
	why, who := cmp.Or(res.Reason, "no reason given"), cmp.Or(res.By, "a human")
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
	return r.runTool(ctx, call)
}

// edited is call as its answer has it run: with the arguments the approver
// edited, when an approve gives them.
func edited(call events.ToolCall, res *events.ApprovalResolved) events.ToolCall {
	if res != nil && res.Action != events.ActionReject && res.Action != events.ActionRejectAndContinue && len(res.Arguments) > 0 {
		call.Arguments = res.Arguments
	}
	return call
}
