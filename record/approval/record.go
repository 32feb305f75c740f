package approval

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/record"
)

// maxTries bounds how often an answer reads the session again because
// something was stored there between its read and its append.
const maxTries = 16

// resolution is an answer to record for a call.
type resolution struct {
	cs  *record.Call
	res events.ApprovalResolved
	at  uint64 // its stream sequence, once stored
}

// answering records resolutions of one run's waiting calls.
type answering struct {
	deps                Deps
	agent, session, run string
	writer              string // the NATS user whose subject they are stored on ("": the plain subject)
}

// claimed is a Recorder's refusal because the session changed.
type claimed interface {
	error
	ClaimedBy() *events.Event
}

// record reads the run, asks plan what to record, and appends it fenced on
// the session as read; when the fence refuses (something was stored
// since), it reads again and asks plan again. Each resolution stored is
// given to stored. It returns the run's state as last read.
func (a *answering) record(ctx context.Context, plan func(*state) ([]resolution, error), stored func(events.ApprovalResolved)) (*state, error) {
	if a.deps.History == nil || a.deps.Recorder == nil {
		return nil, fmt.Errorf("%w: an answer needs a History and a Recorder", ErrInvalid)
	}
	settleBy := time.Now().Add(a.deps.Settle)
	for tries := 0; ; tries++ {
		st, err := read(ctx, a.deps.History, a.agent, a.session, a.run)
		if err != nil {
			return nil, err
		}
		switch ended := st.Ended(); {
		case !st.Found:
			return nil, fmt.Errorf("%w: run %s of %s/%s has no events", ErrBadAnswer, a.run, a.agent, a.session)
		case ended != nil:
			// A call answered before the run ended: name that answer,
			// as for a run still going.
			var first *AnsweredError
			if _, err := plan(st); errors.As(err, &first) {
				first.Ended = ended.Stage
				return st, first
			}
			return st, fmt.Errorf("%w: run %s has ended (%s)", ErrBadAnswer, a.run, ended.Stage)
		}
		todo, err := plan(st)
		if err != nil || len(todo) == 0 {
			return st, err
		}
		if busy, err := a.busy(ctx, st, 0); err != nil {
			return st, err
		} else if busy != "" {
			if time.Now().After(settleBy) {
				return st, fmt.Errorf("%w: run %s is still running its step (%s): answer once it waits", ErrRunBusy, a.run, busy)
			}
			select {
			case <-ctx.Done():
				return st, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		chain, seen := st.Chain(), st.seen
		fenced := false
		var mine []resolution
		for _, t := range todo {
			ev, err := events.New(events.StageApprovalResolved, events.Meta{
				Source: a.deps.Source, AgentID: a.agent, SessionID: a.session, RunID: a.run,
				Step: st.ReplyStep, Subject: t.cs.Request.Call.Name, Traceparent: st.traceparent(a.run, t.res.CallID),
				ParentAgentID: st.parent[0], ParentSessionID: st.parent[1], ParentRunID: st.parent[2],
			}, t.res)
			if err != nil {
				return st, fmt.Errorf("approval: build %s event: %w", events.StageApprovalResolved, err)
			}
			next := chain.Next(ev)
			at, err := a.deps.Recorder.AppendAfterAs(ctx, ev, seen, a.writer)
			var c claimed
			if errors.As(err, &c) {
				fenced = true
				break
			}
			if err != nil {
				return st, fmt.Errorf("%w: approval.resolved of call %s of run %s: %w", ErrUnrecorded, t.res.CallID, a.run, err)
			}
			seen, chain = at, next
			t.cs.Answer, t.cs.Answered = &t.res, ev
			mine = append(mine, resolution{cs: t.cs, res: t.res, at: at})
		}
		if len(mine) > 0 {
			// Read back: the server can admit a fenced append although the
			// session changed (a leader change drops its pending
			// conditions), so an answer counts once the record shows it
			// first for its call.
			if err := a.readBack(ctx, mine, stored); err != nil {
				return st, err
			}
		}
		if !fenced {
			return st, nil
		}
		if tries+1 >= maxTries {
			return st, fmt.Errorf("%w: session %s/%s kept changing while run %s's answer was recorded (%d tries)", ErrUnrecorded, a.agent, a.session, a.run, maxTries)
		}
	}
}

// readBack reads the run again after its answers (mine) were stored and
// gives each to stored when the record holds it as its call's first
// answer; otherwise it returns an *AnsweredError naming the first. A read
// that does not hold them is behind the stream: ErrUnrecorded (answering
// again with the same answer id finds them).
func (a *answering) readBack(ctx context.Context, mine []resolution, stored func(events.ApprovalResolved)) error {
	st, err := read(ctx, a.deps.History, a.agent, a.session, a.run)
	if err != nil {
		return err
	}
	for _, m := range mine {
		cs := st.Calls[m.res.CallID]
		switch {
		case cs == nil || cs.Answer == nil:
			return fmt.Errorf("%w: approval.resolved of call %s of run %s (stream sequence %d) is not in the record read back: read behind the stream", ErrUnrecorded, m.res.CallID, a.run, m.at)
		case cs.Answer.AnswerID != m.res.AnswerID:
			return &AnsweredError{RunID: a.run, CallID: m.res.CallID, First: *cs.Answer}
		}
		stored(m.res)
	}
	return nil
}

// maxBusyDepth bounds how deep busy follows sub-agents.
const maxBusyDepth = 4

// busy names a call of the run's pending step that its attempt is still
// working on ("" when none is): a call with no tool.after that neither
// waits for approval nor calls a sub-agent that waits. An answer recorded
// meanwhile could take a seq that attempt writes next.
func (a *answering) busy(ctx context.Context, st *state, depth int) (string, error) {
	p := st.Pending()
	if p == nil {
		return "", nil
	}
	for _, c := range p.Message.ToolCalls {
		cs := st.Calls[c.ID]
		switch {
		case cs == nil:
			return c.ID + " not started", nil
		case cs.Done, cs.Request != nil:
			continue
		case cs.SubBefore != nil && cs.SubAfter == nil && cs.SubFailed == nil:
			waits, err := a.childWaits(ctx, cs.SubBefore, depth+1)
			if err != nil {
				return "", err
			}
			if !waits {
				return c.ID + ": sub-agent " + cs.SubBefore.AgentID + " running", nil
			}
		default:
			return c.ID + " running", nil
		}
	}
	return "", nil
}

// childWaits reports whether a sub-agent's run waits for a human (its
// attempt ended, its step settled), so its parent writes nothing until
// the child is resumed.
func (a *answering) childWaits(ctx context.Context, sb *events.SubagentBefore, depth int) (bool, error) {
	if depth > maxBusyDepth || sb.RunID == "" || sb.SessionID == "" {
		return false, nil
	}
	st, err := read(ctx, a.deps.History, sb.AgentID, sb.SessionID, sb.RunID)
	if errors.Is(err, ErrCorruptRun) || err == nil && (!st.Found || st.Ended() != nil || st.Pending() == nil) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	busy, err := a.busy(ctx, st, depth)
	if err != nil || busy != "" {
		return false, err
	}
	for _, c := range st.Pending().Message.ToolCalls {
		if cs := st.Calls[c.ID]; cs != nil && !cs.Done {
			return true, nil // waits for approval, or for its own child
		}
	}
	return false, nil
}
