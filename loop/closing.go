package loop

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/record"
)

// Closing a run's record. An attempt that cannot go on (another run took
// its session, its caller gave up, the run itself failed) ends its run with
// events derived from the record as stored, not from what the attempt meant
// to store: an append that was refused or lost leaves no seq and no hash
// behind. Once the attempt's appends in flight have settled, the closing
// reads the session again and
//
//   - writes nothing when the run has an end already, or when another
//     attempt of the run claimed the session after this one (ErrLostRun):
//     a run has one end;
//   - records the outcome of every call whose tool.before is stored and
//     whose tool.after is not: from a recorded tool.result (or sub-agent
//     end), or, when the tool may have run, as unknown (tool.failed with
//     unknown set, and a tool.after with an error result saying so), the
//     form a resumed attempt gives such a call;
//   - records the run's end.
//
// Each event is numbered and chained after the run's last stored event, and
// appended on condition that nothing was stored on the session since it was
// read (Emitter.AppendAfter); when something was, the closing reads again.
// docs/PROTOCOL.md ("One writer per session", "Tamper evidence") has the
// rule.

// closeTimeout bounds the closing of a run's record. It runs on a context
// of its own, since the attempt's may be cancelled.
const closeTimeout = 10 * time.Second

// maxCloseTries bounds how often a closing reads the session again because
// something was stored on it between its read and its append.
const maxCloseTries = 20

// ending is the end a closing records.
type ending struct {
	failed bool   // run.failed with error detail; else run.completed with reason
	reason string // run.completed's reason
	detail string
	// takenOver is set when the end is the session's loss to another run:
	// the end names the run that claimed the session (as the record shows
	// it, else this one).
	takenOver *events.Event
	// unknown says why the outcome of a call that may have run is not
	// recorded.
	unknown string
	// lost are the run's seqs never stored that the end closes over.
	lost []uint64
	// final is set when no attempt of the run will come (its request
	// dropped): the end closes over seqs never stored too.
	final bool
}

// takenBy makes e the end of run r's session taken over by another run's
// attempt, by (its run.started).
func (e *ending) takenBy(r *run, by *events.Event) {
	e.detail = fmt.Sprintf("session %s/%s taken over by run %s (one writer per session)", r.req.AgentID, r.req.SessionID, by.RunID)
	e.unknown = fmt.Sprintf("the session was taken over by run %s before the result was recorded", by.RunID)
}

// closeRun records the run's end e after an attempt's appends failed or
// were refused (see above). It returns the run's result once its end is
// stored; an error wrapping ErrLostRun when the run has an end already or
// another attempt of the run holds it (nothing written); or an error
// wrapping ErrUnrecorded when the end could not be recorded.
func (r *run) closeRun(ctx context.Context, e ending) (*Result, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	defer cancel()
	if e.takenOver != nil {
		e.takenBy(r, e.takenOver)
	}
	res := r.result(ReasonFailed, e.detail)
	if !e.failed {
		res.Reason = e.reason
	}
	if err := r.eng.cfg.Emitter.Flush(ctx, r.req.RunID); err != nil {
		// The failures the record is closed after: what of them is stored
		// is read below.
		r.eng.cfg.Logger.Debug("loop: appends failed before the run's end", "run", r.req.RunID, "err", err)
	}
	for try := 0; ; try++ {
		rec, err := r.readRecord(ctx)
		if err != nil {
			return res, err
		}
		switch {
		case rec.ended != nil:
			return res, fmt.Errorf("%w: run %s ended already (%s, seq %d): nothing more is recorded", ErrLostRun, r.req.RunID, rec.ended.Stage, rec.ended.Seq)
		case rec.resumed != nil:
			return res, fmt.Errorf("%w: another attempt of run %s claimed its session (stream sequence %d)", ErrLostRun, r.req.RunID, rec.resumed.Stored)
		case len(rec.lost) > 0 && e.takenOver == nil && !e.final:
			return res, fmt.Errorf("%w: run %s: seq %d is not stored while later ones are: the attempt that resumes the run fills it", ErrUnrecorded, r.req.RunID, rec.lost[0])
		case len(rec.lost) > 0:
			// Another run holds the session, or no attempt of this one
			// will come: nothing can fill the gap. The end records what
			// was lost.
			e.lost = rec.lost
		}
		if e.takenOver != nil && rec.takenBy != nil {
			e.takenBy(r, rec.takenBy)
		}
		evs, err := r.closingEvents(rec.st, e)
		if err != nil {
			return res, err
		}
		err = r.appendAfter(ctx, evs, rec.seen)
		if err == nil {
			r.events = rec.st.Events + len(evs)
			r.resumeParent(ctx)
			res.Detail, res.Events, res.Ended = e.detail, r.events, true
			return res, nil
		}
		var c Claimed
		if !errors.As(err, &c) || try+1 >= maxCloseTries {
			return res, fmt.Errorf("%w: the end of run %s: %w", ErrUnrecorded, r.req.RunID, err)
		}
		// Something was stored on the session since it was read (another
		// run's event, or part of this closing): read it again.
		if err := sleepCtx(ctx, time.Duration(try+1)*5*time.Millisecond); err != nil {
			return res, fmt.Errorf("%w: the end of run %s: %w", ErrUnrecorded, r.req.RunID, err)
		}
	}
}

// closingRecord is what a closing reads of its run.
type closingRecord struct {
	st   *runState
	seen uint64 // the stream sequence of the session's last event
	// ended is the run's end, when it has one.
	ended *events.Event
	// resumed is a run.started of this run stored after this attempt's
	// claim (or, before it claimed, after its read): another attempt holds
	// the run.
	resumed *events.Event
	// takenBy is the first run.started of another run stored after this
	// attempt's claim: the run that took the session over.
	takenBy *events.Event
	// lost are the seqs of the run missing while a later one is stored
	// (appends lost in a fault), in order.
	lost []uint64
}

// readRecord reads the session as a closing must see it.
func (r *run) readRecord(ctx context.Context) (*closingRecord, error) {
	evs, err := readRun(ctx, r.eng.cfg.History, r.req.AgentID, r.req.SessionID, r.req.RunID)
	if err != nil {
		return nil, err
	}
	mine := r.req.RunID
	mark := r.seen // before a claim: what the attempt read
	if r.claimed {
		mark = r.claim
	}
	rec := &closingRecord{}
	for _, e := range evs {
		rec.seen = max(rec.seen, e.Stored)
		switch {
		case e.RunID == mine && e.Stage.Terminal():
			if rec.ended == nil {
				rec.ended = e
			}
		case e.Stage == events.StageRunStarted && e.Stored > mark && e.RunID == mine:
			rec.resumed = e
		case e.Stage == events.StageRunStarted && e.Stored > mark && rec.takenBy == nil:
			rec.takenBy = e
		}
	}
	eff := record.Effective(evs)
	if rec.st, err = foldRun(eff, mine, &Session{}); err != nil {
		return nil, err
	}
	var prev uint64
	for _, e := range eff {
		if e.RunID != mine || e.Seq == 0 {
			continue
		}
		for s := prev + 1; prev != 0 && s < e.Seq; s++ {
			rec.lost = append(rec.lost, s)
		}
		prev = max(prev, e.Seq)
	}
	return rec, nil
}

// closingEvents builds the events that close the run's record st with end
// e: the outcome of each call left without one, then the end, numbered and
// chained after the run's last stored event.
func (r *run) closingEvents(st *runState, e ending) ([]*events.Event, error) {
	chain := st.Chain()
	var out []*events.Event
	add := func(stage events.Stage, p any, subject string, step int) error {
		ev, err := r.event(stage, p, subject)
		if err != nil {
			return err
		}
		ev.Step = step
		if chain, err = chain.NextSigned(ev, r.eng.cfg.Signer); err != nil {
			return fmt.Errorf("loop: %w", err)
		}
		out = append(out, ev)
		return nil
	}
	for _, cs := range unsettled(st) {
		call := cs.Before.Call
		res, known := settledResult(cs)
		if !known {
			why := "outcome unknown: " + e.unknown
			if err := add(events.StageToolFailed, events.ToolFailed{Call: call, Error: why, Unknown: true}, call.Name, cs.Step); err != nil {
				return nil, err
			}
			res = errorResult(call, why)
		}
		if err := add(events.StageToolAfter, events.ToolAfter{Call: call, Result: res}, call.Name, cs.Step); err != nil {
			return nil, err
		}
	}
	if e.failed {
		return out, add(events.StageRunFailed, events.RunFailed{Error: e.detail + lostDetail(e.lost), Steps: r.step, Lost: e.lost}, "", r.step)
	}
	rc := events.RunCompleted{Reason: e.reason, Detail: e.detail, Steps: r.step, Usage: r.usage, Events: st.Events + len(out)}
	return out, add(events.StageRunCompleted, rc, "", r.step)
}

// unsettled returns the calls of st whose tool.before is stored and whose
// tool.after is not, although the tool ran or may have: not those a
// recorded decision on the tool.before settled (deny, mock, stop, ask),
// nor those waiting for an answer or rejected. In the order of their
// tool.before.
func unsettled(st *runState) []*record.Call {
	var out []*record.Call
	for _, cs := range st.Calls {
		switch {
		case cs.Before == nil || cs.Done:
		case cs.Request == nil && st.Decisions[cs.BeforeID] != nil:
		case cs.Request != nil && (cs.Answer == nil || !cs.Answer.Approved):
		default:
			out = append(out, cs)
		}
	}
	slices.SortFunc(out, func(a, b *record.Call) int { return cmp.Compare(a.BeforeSeq, b.BeforeSeq) })
	return out
}

// settledResult is the result the record holds for a call without
// tool.after: its tool.result, or its sub-agent's end; known is false when
// it holds none.
func settledResult(cs *record.Call) (res events.ToolResult, known bool) {
	if cs.Result != nil {
		return *cs.Result, true
	}
	return subagentEnd(cs)
}

// appendAfter appends evs in order, the first on condition that the
// session's last stored event is at stream sequence seen, each next one
// after the one before.
func (r *run) appendAfter(ctx context.Context, evs []*events.Event, seen uint64) error {
	for _, ev := range evs {
		at, err := r.eng.cfg.Emitter.AppendAfter(ctx, ev, seen)
		if err != nil {
			return err
		}
		seen = at
	}
	return nil
}

// lostDetail says which seqs an end closes over, for its error text.
func lostDetail(lost []uint64) string {
	switch len(lost) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("; seq %d was never stored (an append lost in a fault)", lost[0])
	}
	return fmt.Sprintf("; seqs %v were never stored (appends lost in a fault)", lost)
}

// Close records the end of req's run, run.failed with detail, without
// running anything: for a run that will not be attempted again (its
// request dropped by the queue after its last attempt). Calls under way
// get their outcome as any closing gives them (see above). It returns an
// error wrapping ErrLostRun when the run has an end already (nothing
// written), or ErrUnrecorded when the end could not be recorded (its
// session cannot be read or written). Seqs of the run never stored (appends
// lost in a fault) are named by the end (RunFailed.Lost), as when another
// run took the session over.
func (e *Engine) Close(ctx context.Context, req *events.RunRequest, detail string) (*Result, error) {
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	rq := *req
	// No attempt of this one claimed the session: whatever the record
	// holds is closed, another attempt's run.started included.
	r := &run{eng: e, builder: builder{source: e.cfg.Source, req: &rq}, seen: math.MaxUint64}
	rec, err := r.readRecord(ctx)
	if err != nil {
		return nil, err
	}
	r.restore(rec.st)
	r.step = max(r.step, rec.st.ReplyStep) // the step under way, if any
	return r.closeRun(ctx, ending{failed: true, detail: detail, final: true,
		unknown: "the run's attempts ran out before the result was recorded"})
}
