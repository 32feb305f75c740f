package loop

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/record/approval"
)

// Resumer resumes the runs that wait for approval, from their record: a
// worker gives it the approval.resolved events of the agents it serves
// (Resolved, the handler of a durable observer of the events) and their
// due wake-ups (Due, the handler of the wakes consumer). Every answer
// recorded while no worker ran is still in the record, so the run is
// resumed when a worker starts.
type Resumer struct {
	// History reads the runs' sessions (required).
	History History
	// Recorder records expiries (required for Due).
	Recorder approval.Recorder
	// Queue queues resumptions, and wake-ups at later expiries (required).
	Queue Queue
	// Source is the CloudEvent source of the expiries it records (default
	// DefaultSource).
	Source string
	// Logger defaults to discarding.
	Logger *slog.Logger
}

func (r *Resumer) log() *slog.Logger { return cmp.Or(r.Logger, slog.New(slog.DiscardHandler)) }

// Resolved queues the resumption of e's run when e, an approval.resolved,
// is the answer that left no call of the run's step waiting, the run has
// no end, and no attempt started since. The resumption (RunRequest with
// Resume) is pinned to the definition the run's record names
// (RecordedDefinition: RunRequest.Definition), so only workers holding
// that definition take it, and is queued with the de-duplication id
// "resume.<run>.<e's id>", so handling e again queues it once. Any other
// event is left alone. A read of the session that does not hold e is
// behind the stream (a replica catching up): it is not taken for the
// record. A nil error means nothing is left to do for e; an error (the
// session or the queue cannot be reached, the read behind) asks for e
// again.
func (r *Resumer) Resolved(ctx context.Context, e *events.Event) error {
	if e.Stage != events.StageApprovalResolved {
		return nil
	}
	if r.History == nil || r.Queue == nil {
		return fmt.Errorf("%w: a Resumer needs a History and a Queue", ErrInvalidConfig)
	}
	evs, err := readRun(ctx, r.History, e.AgentID, e.SessionID, e.RunID)
	if err != nil {
		return err
	}
	if err := holds(evs, e.Stored, "the answer "+e.ID); err != nil {
		return fmt.Errorf("%w: read session %s/%s: %w", ErrUnrecorded, e.AgentID, e.SessionID, err)
	}
	_, st, err := rebuild(evs, e.RunID)
	if err != nil {
		r.log().Error("loop: a run that waits for approval cannot be read: not resumed", "run", e.RunID, "err", err)
		return nil
	}
	last, ok := completedBy(st)
	if !ok || last != e.Seq {
		return nil
	}
	for _, s := range st.StartedSeqs {
		if s > last {
			return nil // resumed since
		}
	}
	req := &events.RunRequest{RunID: e.RunID, AgentID: e.AgentID, SessionID: e.SessionID, Resume: true,
		ParentAgentID: e.ParentAgentID, ParentSessionID: e.ParentSessionID, ParentRunID: e.ParentRunID,
		Definition: st.definitionDigest(), ResumeAfter: e.Stored}
	if err := r.Queue.Resume(ctx, req, "resume."+e.RunID+"."+e.ID); err != nil {
		return fmt.Errorf("%w: queue the resumption of run %s: %w", ErrUnrecorded, e.RunID, err)
	}
	r.log().Info("run resumed: every approval of its step is answered", "run", e.RunID, "agent", e.AgentID, "answer", e.ID)
	return nil
}

// completedBy returns the seq of the answer that left no call of the run's
// pending step waiting, and false when the run has ended, has no pending
// step, or a call of it still waits.
func completedBy(st *runState) (uint64, bool) {
	p := st.Pending()
	if !st.Found || st.Ended() != nil || p == nil {
		return 0, false
	}
	var last uint64
	for _, c := range p.Message.ToolCalls {
		cs := st.Calls[c.ID]
		if cs == nil || cs.Request == nil || cs.Done {
			continue
		}
		if cs.Answer == nil {
			return 0, false
		}
		last = max(last, cs.Answered.Seq)
	}
	return last, last != 0
}

// Due records the expiry of every call of w's run that still waits past
// its expires_at: approval.resolved by hookbus (channel expiry, expired),
// resolving it by its on_expiry, on the plain subject and fenced as any
// answer (approval.Expire: an answer given first wins). Those records then
// resume the run (Resolved). When calls still wait for a later expiry, it
// schedules the run's next wake-up. A run that ended, or has no events,
// needs nothing. An error (the record cannot be read or written, the run
// still busy with its step) asks for w again.
func (r *Resumer) Due(ctx context.Context, w events.Wake) error {
	if r.History == nil || r.Recorder == nil || r.Queue == nil {
		return fmt.Errorf("%w: a Resumer needs a History, a Recorder and a Queue", ErrInvalidConfig)
	}
	expired, next, err := approval.Expire(ctx, approval.Deps{History: r.History, Recorder: r.Recorder, Source: cmp.Or(r.Source, DefaultSource)},
		w.AgentID, w.SessionID, w.RunID)
	switch {
	case errors.Is(err, approval.ErrBadAnswer):
		return nil // no such run, or it ended: nothing waits
	case err != nil:
		return err
	}
	if expired > 0 {
		r.log().Info("approvals expired", "run", w.RunID, "agent", w.AgentID, "calls", expired)
	}
	if !next.IsZero() {
		if err := r.Queue.WakeAt(ctx, events.Wake{RunID: w.RunID, AgentID: w.AgentID, SessionID: w.SessionID, At: next}); err != nil {
			return fmt.Errorf("%w: schedule the next wake-up of run %s: %w", ErrUnrecorded, w.RunID, err)
		}
	}
	return nil
}
