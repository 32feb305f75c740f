package loop

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/record"
)

// run is one execution of a run request: one attempt after another until
// one gets to claim the session.
type run struct {
	eng *Engine
	builder
	maxSteps int
	hooks    Interception
	budget   events.Budget

	// The attempt's state.
	claim        uint64 // before the claim: the session's last claim as read; after: the attempt's
	seen         uint64 // the stream sequence of the session's last event as read
	claimed      bool
	cold         bool         // the attempt took its session for empty without reading it (knownsessions.go)
	chain        record.Chain // the seq and chain hash of the run's last event
	events       int
	usage        events.Usage
	continues    int
	messages     []events.Message
	answer       string
	resumed      bool
	startSeq     uint64                     // the seq of the attempt's run.started
	firstStarted uint64                     // the stream sequence of the run's first run.started
	lastContext  int                        // the model's last reported context size (input + output tokens)
	waiting      []events.ApprovalRequested // calls the attempt left waiting for a human
	childWaiting bool                       // a sub-agent waits for a human
	open         []events.ToolCall          // calls other runs left open, answered before a new run's turn
	adopted      *events.Definition         // the run's recorded definition, when this attempt adopts it
}

// errEnd carries an early end of the run (denied, stopped) up the stack.
type errEnd struct{ reason, detail string }

func (e *errEnd) Error() string { return e.reason + ": " + e.detail }

// maxStaleReads bounds how often an attempt reads the session again because
// another attempt claimed it between its read and its claim.
const maxStaleReads = 3

// maxBusyReads bounds how often an attempt reads the session again because
// another run's event was stored between its read and an append before its
// claim (a busy session).
const maxBusyReads = 20

func (r *run) execute(ctx context.Context) (*Result, error) {
	for tries, busy := 0, 0; ; {
		res, err := r.attempt(ctx)
		var lost Claimed
		if err == nil || !errors.As(err, &lost) {
			return res, err
		}
		if r.coldRefused() {
			continue
		}
		by := lost.ClaimedBy()
		other := by.Stage != events.StageRunStarted && by.RunID != r.req.RunID
		switch {
		case r.claimed:
		case other && busy < maxBusyReads:
			// Another run wrote the session after this attempt read it,
			// before its first append: read it again.
			busy++
			r.reset()
			if err := sleepCtx(ctx, time.Duration(busy)*5*time.Millisecond); err != nil {
				return nil, fmt.Errorf("%w: run %s: %w", ErrUnrecorded, r.req.RunID, err)
			}
			continue
		case other:
			return nil, fmt.Errorf("%w: session %s/%s kept changing before run %s could claim it: %w", ErrUnrecorded, r.req.AgentID, r.req.SessionID, r.req.RunID, err)
		case tries < maxStaleReads:
			// Another attempt claimed the session after this one read it
			// (or, before its claim, appended to this run): read it again
			// (nothing of this attempt was stored since).
			tries++
			r.eng.cfg.Logger.Debug("loop: session claimed since it was read; reading it again", "run", r.req.RunID, "by", by.RunID)
			r.reset()
			continue
		}
		return r.lost(ctx, err, by)
	}
}

// coldRefused reports whether a cold attempt (one that took its session
// for empty without reading it) was refused its first append: the session
// holds events after all, nothing of the attempt was stored, and the run
// starts again from a read of the session. An attempt that stored its
// first event proved the session empty: a later refusal is an ordinary one.
func (r *run) coldRefused() bool {
	if !r.cold {
		return false
	}
	r.cold = false
	if r.claimed || r.seen != 0 {
		return false
	}
	r.eng.known.add(r.req.AgentID, r.req.SessionID)
	r.eng.cfg.Logger.Debug("loop: the session taken for new holds events; reading it", "run", r.req.RunID, "session", r.req.SessionID)
	r.reset()
	return true
}

// sleepCtx waits d, or until ctx ends (its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (r *run) reset() {
	r.claim, r.seen, r.claimed, r.chain, r.step, r.events = 0, 0, false, record.Chain{}, 0, 0
	r.usage, r.continues, r.messages, r.answer, r.resumed = events.Usage{}, 0, nil, "", false
	r.startSeq, r.waiting, r.firstStarted, r.lastContext, r.childWaiting = 0, nil, 0, 0, false
}

// lost ends an attempt whose session another attempt claimed: nothing of
// it is stored any more. If the claim is another attempt of this run, that
// attempt carries the run on (ErrLostRun); if it is another run's, this
// run's end is recorded (run.failed naming that run, closeRun) so nobody
// waits for it, unless the record shows the run ended or held by another
// of its attempts.
func (r *run) lost(ctx context.Context, cause error, by *events.Event) (*Result, error) {
	if by.RunID == r.req.RunID {
		r.eng.cfg.Logger.Warn("loop: run taken over by another attempt", "run", r.req.RunID, "err", cause)
		return r.result(ReasonFailed, cause.Error()), fmt.Errorf("%w: %w", ErrLostRun, cause)
	}
	res, err := r.closeRun(ctx, ending{failed: true, takenOver: by})
	switch {
	case errors.Is(err, ErrLostRun):
		r.eng.cfg.Logger.Warn("loop: run taken over by another attempt", "run", r.req.RunID, "err", err)
		return res, fmt.Errorf("%w (%w)", err, cause)
	case err != nil:
		return res, errors.Join(cause, err)
	}
	return res, fmt.Errorf("loop: %s: %w", res.Detail, cause)
}

// attempt reads the session and runs the request from where its events say
// it is.
func (r *run) attempt(ctx context.Context) (*Result, error) {
	sess, st, err := r.read(ctx)
	if err != nil {
		return nil, err
	}
	if st.Ended() != nil {
		return resultOf(r.req, st.Ended(), st), nil
	}
	if err := r.checkDefinition(st); err != nil {
		return nil, err
	}
	r.messages, r.claim, r.open, r.seen = sess.Messages, sess.lastClaim, sess.open, sess.lastSeen
	if st.TakenBy != nil {
		return r.overtaken(ctx, st)
	}
	if !st.Found {
		st = nil
	}
	res, err := r.body(ctx, st)
	if err == nil {
		return res, nil
	}
	var (
		end     *errEnd
		claimed Claimed
	)
	switch {
	case errors.As(err, &claimed):
		// Another attempt claimed the session: execute reads it again, or
		// ends this attempt (lost).
		return nil, err
	case errors.As(err, &end) && ctx.Err() == nil:
		return r.finish(ctx, end.reason, end.detail)
	case ctx.Err() != nil && handedBack(ctx):
		// The worker is stopping and hands the run back: nothing is
		// recorded; another attempt resumes the run from its events.
		return nil, fmt.Errorf("loop: run %s not ended: %w", r.req.RunID, context.Cause(ctx))
	case ctx.Err() != nil:
		// The caller gave up: record it, on a context that still works.
		return r.closeRun(ctx, ending{reason: events.ReasonInterrupted, detail: ctx.Err().Error(),
			unknown: "the run was interrupted before the result was recorded"})
	case errors.Is(err, ErrUnrecorded):
		// The record cannot be written (NATS away longer than the Emitter
		// waits): the run is not ended; it resumes from its events when
		// run again.
		return nil, err
	}
	return r.fail(ctx, err)
}

// handedBack reports whether ctx was cancelled to hand its run back to the
// queue rather than to end it: its cause (context.Cause) has a HandedBack
// method reporting true (the run queue's runs.ErrHandedBack).
func handedBack(ctx context.Context) bool {
	var hb interface{ HandedBack() bool }
	return errors.As(context.Cause(ctx), &hb) && hb.HandedBack()
}

// overtaken ends a run whose session another run claimed after the run's
// last attempt did (that attempt cut off: its worker gone, or the run
// waiting for a human), as that attempt would have had it been running:
// the other run's turn came after this one's, so this one cannot go on
// (one writer per session). Its calls under way get their outcome, and
// run.failed names the other run (closeRun).
func (r *run) overtaken(ctx context.Context, st *runState) (*Result, error) {
	r.resumed = true
	r.restore(st)
	by := st.TakenBy
	return r.lost(ctx, fmt.Errorf("run %s claimed session %s/%s after this run's last attempt", by.RunID, r.req.AgentID, r.req.SessionID), by)
}

// read reads and folds the session; a cold attempt before its claim
// folds no events instead (an empty session, which its first append
// proves).
func (r *run) read(ctx context.Context) (*Session, *runState, error) {
	var evs []*events.Event
	if !r.cold || r.claimed {
		var err error
		evs, err = readRun(ctx, r.eng.cfg.History, r.req.AgentID, r.req.SessionID, r.req.RunID)
		if err != nil {
			return nil, nil, err
		}
		if len(evs) > 0 {
			r.eng.known.add(r.req.AgentID, r.req.SessionID)
		}
	}
	// A read that does not hold what is known stored is not the record:
	// after the claim, numbering from it would reuse seqs, and a call it
	// does not show would run again; on a resumption, the run would be
	// taken for still waiting for the answer that resumed it.
	anchor, what := r.req.ResumeAfter, "the answer that resumed the run"
	if r.claimed {
		anchor, what = r.claim, "the attempt's own claim"
	}
	if err := holds(evs, anchor, what); err != nil {
		return nil, nil, fmt.Errorf("%w: read session %s/%s: %w", ErrUnrecorded, r.req.AgentID, r.req.SessionID, err)
	}
	sess, st, err := rebuild(evs, r.req.RunID)
	if err != nil {
		return nil, nil, err
	}
	r.setTrace(st)
	for _, err := range sess.Skipped {
		r.eng.cfg.Logger.Warn("loop: session event skipped", "agent", r.req.AgentID, "session", r.req.SessionID, "err", err)
	}
	return sess, st, nil
}

// body runs the run from where its events say it is (st nil: from the start).
func (r *run) body(ctx context.Context, st *runState) (*Result, error) {
	prompt := r.req.Prompt
	if st != nil {
		r.resumed = true
		r.restore(st)
		if st.Intake != nil {
			prompt = st.Intake.Prompt
		}
	}
	if st != nil && st.Prompt != "" && st.Intake == nil {
		prompt = st.Prompt // the intake is before the part of the record read
	}
	if r.req.Compact {
		return r.compactRun(ctx, st)
	}
	if st == nil || st.Intake == nil && !st.Started {
		in, out, err := intercepted(ctx, r, stage{stage: events.StageIntake},
			events.Intake{Prompt: prompt, Metadata: r.req.Metadata, HistoryMessages: len(r.messages)}, nil)
		if err != nil {
			return nil, err
		}
		prompt = in.Prompt
		if end := endOf(out); end != nil {
			end.reason = events.ReasonRejected
			return nil, end
		}
	}
	var history int
	if st == nil || !st.Started {
		// Calls another run left open are answered before this turn, as
		// every later rebuild will.
		r.messages = appendNoResults(r.messages, r.open)
		history = len(r.messages)
		r.messages = append(r.messages, events.Message{Role: events.RoleUser, Content: prompt})
	} else {
		history = st.history
	}
	// Every attempt starts with run.started, its claim on the session: a
	// resumed one says so, and the record shows where a worker took the
	// run over. One that takes over from an earlier attempt's claim, having
	// appended nothing itself, claims only the session as it read it.
	reclaim := st != nil && st.Started && st.Intake != nil
	if err := r.claimSession(ctx, events.RunStarted{
		Prompt: prompt, HistoryMessages: history, Resumed: r.resumed, MaxSteps: r.maxSteps,
		ParentTraceparent: r.parentTrace,
	}, reclaim); err != nil {
		return nil, err
	}
	r.startSeq = r.chain.Seq
	if r.resumed {
		// Read the record again now that nothing of an earlier attempt can
		// be stored any more: an event stored after this attempt first read
		// it is part of the record (or superseded by this run.started).
		sess, again, err := r.read(ctx)
		if err != nil {
			return nil, err
		}
		if again.Ended() != nil {
			// The run ended between the first read and the claim: a claim
			// the server admitted although the session changed (a leader
			// change can drop its pending conditions). It ends nothing
			// again.
			r.eng.cfg.Logger.Warn("loop: the run ended before this attempt's claim; nothing more is recorded", "run", r.req.RunID, "claim", r.claim)
			return resultOf(r.req, again.Ended(), again), nil
		}
		st = again
		r.messages = sess.Messages
		r.restore(st)
	}
	if st != nil {
		if res, err, done := r.resume(ctx, st); done {
			return res, err
		}
	}
	return r.steps(ctx)
}

// restore takes the counters of the run's record.
func (r *run) restore(st *runState) {
	r.chain, r.usage, r.continues, r.events = st.Chain(), st.Usage, st.Continues, st.Events
	r.step = st.StepDone
	if st.FirstClaim != 0 {
		r.firstStarted = st.FirstClaim
	}
}

// compactRun is a run asked only to compact its session (loop compact): it
// claims the session, compacts, and ends.
func (r *run) compactRun(ctx context.Context, st *runState) (*Result, error) {
	if st != nil && st.Started {
		return nil, fmt.Errorf("%w: run %s already ran: a compaction is a run of its own", ErrInvalidRequest, r.req.RunID)
	}
	if err := r.claimSession(ctx, events.RunStarted{MaxSteps: 0, ParentTraceparent: r.parentTrace}, false); err != nil {
		return nil, err
	}
	if err := r.compact(ctx, r.contextTokens(), true); err != nil {
		return nil, err
	}
	return r.finish(ctx, events.ReasonDone, "compacted")
}

// claimSession appends the attempt's run.started on the session's last
// claim as read, after every earlier event of the attempt (its intake), and
// takes it as the attempt's claim. With reclaim (the attempt appended
// nothing before) it also expects the session's last event as read, so an
// earlier attempt of the run that is still alive cannot slip events in
// between the read and the claim (Emitter.Reclaim).
func (r *run) claimSession(ctx context.Context, p events.RunStarted, reclaim bool) error {
	p.Definition, p.PreviousDefinition, p.Worker = r.eng.definition(), r.adopted, r.eng.cfg.Worker
	ev, err := r.event(events.StageRunStarted, p, "")
	if err != nil {
		return err
	}
	em := r.eng.cfg.Emitter
	if err := em.Flush(ctx, r.req.RunID); err != nil {
		return fmt.Errorf("%w: intake of run %s: %w", ErrUnrecorded, r.req.RunID, err)
	}
	next := r.chain.Next(ev)
	r.chain.Seq = next.Seq
	var claim uint64
	if reclaim {
		claim, err = em.Reclaim(ctx, ev, r.claim, r.seen)
	} else {
		claim, err = em.Claim(ctx, ev, r.claim)
	}
	if err != nil {
		return fmt.Errorf("%w: claim session %s/%s for run %s: %w", ErrUnrecorded, r.req.AgentID, r.req.SessionID, r.req.RunID, err)
	}
	r.chain = next
	r.claim, r.claimed = claim, true
	r.eng.known.add(r.req.AgentID, r.req.SessionID)
	if r.firstStarted == 0 {
		r.firstStarted = claim
	}
	r.events++
	return nil
}

// resume carries on a run whose record says where it was; done is false
// when only its next steps are left.
func (r *run) resume(ctx context.Context, st *runState) (res *Result, err error, done bool) {
	if st.Answered() {
		// The last step's reply is the answer; only the run's end is
		// missing. End it without asking the model again.
		r.answer = st.Reply.Message.Content
		if st.StopStep != st.StepDone {
			res, err := r.stop(ctx)
			if err != nil || res != nil {
				return res, err, true
			}
			return nil, nil, false // a stop hook continued it
		}
		if st.StopHook != nil { // a stop hook ended it
			return nil, &errEnd{events.ReasonStopped, describe(interceptors.RecordedResult(st.StopHook))}, true
		}
		res, err := r.finish(ctx, events.ReasonDone, "")
		return res, err, true
	}
	pending := st.Pending()
	if pending == nil {
		return nil, nil, false
	}
	r.step = st.ReplyStep
	if st.ReplyEnd != nil {
		// A hook ended the run on this reply before the worker stopped: its
		// tool calls never run.
		return nil, endOf(st.ReplyEnd), true
	}
	r.answer = pending.Message.Content
	earlier := st.goneOnBefore(r.startSeq)
	for _, c := range pending.Message.ToolCalls {
		cs := st.Calls[c.ID]
		switch {
		case cs != nil && cs.Done:
			continue
		case cs != nil && cs.Request != nil && cs.Answer == nil:
			r.waiting = append(r.waiting, *cs.Request)
			continue
		case cs != nil && cs.Request != nil && len(st.Waiting()) > 0:
			continue // answered, but acted on only once every call of the step is
		case cs != nil && cs.Request != nil:
			err = r.actOnAnswer(ctx, st, cs, earlier)
		case cs != nil && cs.Before != nil:
			err = r.resumeCall(ctx, st, cs)
		default:
			err = r.callTool(ctx, c)
		}
		if errors.Is(err, errAwaitApproval) || errors.Is(err, errChildWaiting) {
			if errors.Is(err, errChildWaiting) {
				r.childWaiting = true
			}
			err = nil
		}
		if err != nil {
			return nil, err, true
		}
	}
	if len(r.waiting) > 0 || r.childWaiting {
		res, err := r.wait(ctx)
		return res, err, true
	}
	res, err = r.endStep(ctx, len(pending.Message.ToolCalls), pending.Usage)
	if err != nil || res != nil {
		return res, err, true
	}
	return nil, nil, false
}

// finish ends the run with run.completed, appended after every earlier
// event of the run is stored.
func (r *run) finish(ctx context.Context, reason, detail string) (*Result, error) {
	rc := events.RunCompleted{Reason: reason, Answer: r.answer, Detail: detail, Steps: r.step, Usage: r.usage, Events: r.events}
	if reason != events.ReasonDone && reason != events.ReasonMaxSteps {
		rc.Answer = ""
	}
	if err := r.emitSync(ctx, events.StageRunCompleted, rc, ""); err != nil {
		return nil, err
	}
	r.resumeParent(ctx)
	res := r.result(reason, detail)
	res.Answer, res.Ended = rc.Answer, true
	return res, nil
}

// result is the attempt's result so far, with reason and detail.
func (r *run) result(reason, detail string) *Result {
	return &Result{
		RunID: r.req.RunID, AgentID: r.req.AgentID, SessionID: r.req.SessionID,
		Reason: reason, Detail: detail, Steps: r.step, Usage: r.usage, Events: r.events, Resumed: r.resumed,
	}
}

// fail ends the run with run.failed (its own failure, not the record's;
// closeRun) and returns cause.
func (r *run) fail(ctx context.Context, cause error) (*Result, error) {
	res, err := r.closeRun(ctx, ending{failed: true, detail: cause.Error(),
		unknown: "the run failed before the result was recorded"})
	if err != nil {
		return res, errors.Join(cause, err)
	}
	return res, cause
}

// resumeParent queues the resumption of the run that called this one, when
// this one ran detached from it (resumed from the queue after waiting for a
// human): the parent waits for its end.
func (r *run) resumeParent(ctx context.Context) {
	q := r.eng.cfg.Queue
	if r.req.ParentRunID == "" || !r.req.Resume || q == nil {
		return
	}
	parent := &events.RunRequest{RunID: r.req.ParentRunID, AgentID: r.req.ParentAgentID, SessionID: r.req.ParentSessionID, Resume: true}
	if err := q.Resume(ctx, parent, "resume."+r.req.ParentRunID+".child."+r.req.RunID); err != nil {
		r.eng.cfg.Logger.Warn("loop: the parent of a finished sub-agent run was not resumed", "run", r.req.RunID, "parent", r.req.ParentRunID, "err", err)
	}
}

// resultOf reads the result of a run that already ended (term), or of one
// that waits (term nil).
func resultOf(req *events.RunRequest, term *events.Event, st *runState) *Result {
	if term == nil {
		res := &Result{RunID: req.RunID, AgentID: req.AgentID, SessionID: req.SessionID, Events: st.Events,
			Steps: st.StepDone, Usage: st.Usage, Reason: ReasonWaiting, Detail: "waiting for approval"}
		for _, cs := range st.Waiting() {
			res.Waiting = append(res.Waiting, *cs.Request)
		}
		return res
	}
	res := &Result{RunID: req.RunID, AgentID: req.AgentID, SessionID: req.SessionID, Events: st.Events, Steps: term.Step, Ended: true}
	if term.Stage == events.StageRunFailed {
		p, _ := events.Data[events.RunFailed](term)
		res.Reason, res.Detail, res.Steps = ReasonFailed, p.Error, p.Steps
		return res
	}
	p, _ := events.Data[events.RunCompleted](term)
	res.Reason, res.Detail, res.Answer, res.Steps, res.Usage = p.Reason, p.Detail, p.Answer, p.Steps, p.Usage
	return res
}
