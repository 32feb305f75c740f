package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/hookbus/hookbus/events"
)

// Answers to approvals are recorded where they are given: the client that
// answers (observer approve|reject, the web page, any program) appends the
// approval.resolved to the run's record itself, fenced on the session as it
// read it, so the first answer wins and a later one is refused at once,
// naming the first, whether or not a worker runs. Workers see the answer in
// the record and resume the run (Resumer). See docs/PROTOCOL.md,
// "Approvals".

// Recorder appends an event to its session on condition that the
// session's last event is still the one at stream sequence seen (the
// session as the caller read it), on the subject of writer (a NATS user;
// "" for the plain subject), and returns the stream sequence it was stored
// at. A refusal because the session changed is an error for which
// errors.As finds a Claimed. *bus.Bus implements it.
type Recorder interface {
	AppendAfterAs(ctx context.Context, e *events.Event, seen uint64, writer string) (uint64, error)
}

// AnswerDeps is what AnswerApproval reads and writes the record with.
type AnswerDeps struct {
	History  History
	Recorder Recorder
	// Source is the CloudEvent source of the answers (default
	// DefaultAnswerSource).
	Source string
	// Settle is how long AnswerApproval waits for a run still working on
	// its step's other calls (default DefaultSettle).
	Settle time.Duration
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Defaults of AnswerDeps.
const (
	DefaultAnswerSource = "hookbus/approvals"
	DefaultSettle       = 5 * time.Second
)

// AnswerRequest is an answer to a run's tool calls waiting for approval.
type AnswerRequest struct {
	AgentID, SessionID, RunID string
	// CallID is the call answered; empty answers every call of the run's
	// step that waits.
	CallID string
	// Action is events.ActionApprove, ActionReject or
	// ActionRejectAndContinue; the two rejects need a Reason (with
	// reject_and_continue the model is given it).
	Action, Reason, Comment string
	// Arguments, with approve, are the call's arguments as the approver
	// edited them (a JSON object): the call runs with them. Empty: as
	// requested.
	Arguments json.RawMessage
	// By is who answers: Identity (authenticated) and Writer (the NATS
	// user whose connection writes the record: the answer is stored on
	// that user's subject) are required; Channel defaults to
	// events.ChannelNATS; DeclaredBy is kept as a note.
	By events.Actor
	// AnswerID, with CallID, is the answer's id (a ULID; default a new
	// one). A client that gives an answer again with the same id (after a
	// timeout, say) finds it recorded rather than refused.
	AnswerID string
}

// AnswerResult is what an answer recorded.
type AnswerResult struct {
	// Resolved are the approval.resolved recorded, one per call answered.
	Resolved []events.ApprovalResolved
	// Waiting are the calls of the step still waiting for an answer. When
	// none is, every call of the step is answered: workers resume the run.
	Waiting []events.ApprovalRequested
}

// AnsweredError is AnswerApproval's error for a call that has an answer
// already: First is that answer. It matches ErrBadAnswer with errors.Is.
type AnsweredError struct {
	RunID, CallID string
	First         events.ApprovalResolved
	// Ended is the stage of the run's end when the run has ended since.
	Ended events.Stage
}

func (e *AnsweredError) Error() string {
	msg := fmt.Sprintf("%s: call %s of run %s was answered already: %s", ErrBadAnswer, e.CallID, e.RunID, e.First.Describe())
	if e.Ended != "" {
		msg += fmt.Sprintf("; the run has ended (%s)", e.Ended)
	}
	return msg
}

// Is matches ErrBadAnswer.
func (e *AnsweredError) Is(target error) bool { return target == ErrBadAnswer }

// maxAnswerTries bounds how often an answer reads the session again
// because something was stored there between its read and its append.
const maxAnswerTries = 16

// AnswerApproval records an answer to a run's tool calls waiting for
// approval: one approval.resolved per call, appended after the run's last
// event (ce-seq the next, ce-prevhash its chain hash) on req.By.Writer's
// subject, on condition that nothing was stored on the session since it was
// read (Recorder); on refusal it reads the session again and retries. So
// the first answer to a call wins, and any later one, from any client, is
// refused at once with an *AnsweredError naming it. When the answer leaves
// no call of the step waiting, workers resume the run from the record; no
// worker need be running when it is given.
//
// A run still working on its step (another call of the step not finished:
// its worker would write after the answer) is waited for, up to
// deps.Settle, then refused with ErrRunBusy. Other refusals wrap
// ErrBadAnswer (no such run, a run that ended, no such call waiting), or
// ErrInvalidRequest (bad ids, action, reason or actor); a failure to read
// or write the record wraps ErrUnrecorded. Nothing is recorded by a
// refusal. With CallID empty, the calls answered before a refusal stay
// answered (Resolved lists them).
func AnswerApproval(ctx context.Context, deps AnswerDeps, req AnswerRequest) (*AnswerResult, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	if req.By.Channel == "" {
		req.By.Channel = events.ChannelNATS
	}
	ids := map[string]string{} // call id → the id of this answer to it
	if req.AnswerID != "" {
		ids[req.CallID] = req.AnswerID
	}
	var want []string // the calls answered, as first read
	var mine []events.ApprovalResolved
	plan := func(st *runState) ([]resolution, error) {
		if want == nil {
			if req.CallID != "" {
				want = []string{req.CallID}
			}
			for _, cs := range st.waiting() {
				if req.CallID == "" {
					want = append(want, cs.Request.Call.ID)
				}
			}
			if len(want) == 0 {
				if first := answeredInStep(st); first != nil {
					return nil, &AnsweredError{RunID: req.RunID, CallID: first.CallID, First: *first}
				}
				return nil, fmt.Errorf("%w: run %s has no call waiting for approval", ErrBadAnswer, req.RunID)
			}
		}
		var todo []resolution
		now := nowUTC()
		for _, id := range want {
			cs := st.calls[id]
			if cs == nil || cs.Request == nil {
				return nil, fmt.Errorf("%w: run %s has no call %s waiting for approval", ErrBadAnswer, req.RunID, id)
			}
			if r := cs.Answer; r != nil {
				if r.AnswerID != "" && r.AnswerID == ids[id] {
					// This answer, recorded by an earlier try (or an
					// earlier call with the same answer id).
					if !slices.ContainsFunc(mine, func(m events.ApprovalResolved) bool { return m.CallID == id }) {
						mine = append(mine, *r)
					}
					continue
				}
				return nil, &AnsweredError{RunID: req.RunID, CallID: id, First: *r}
			}
			if ids[id] == "" {
				ids[id] = events.NewID()
			}
			by := req.By
			todo = append(todo, resolution{cs: cs, res: events.ApprovalResolved{
				CallID: id, Approved: req.Action == events.ActionApprove, Action: req.Action,
				By: by.Identity, Actor: by, Reason: req.Reason, Comment: req.Comment,
				AnswerID: ids[id], AnsweredAt: now, Arguments: req.Arguments,
			}})
		}
		return todo, nil
	}
	a := &answering{deps: deps.withDefaults(), agent: req.AgentID, session: req.SessionID, run: req.RunID, writer: req.By.Writer}
	st, err := a.record(ctx, plan, func(r events.ApprovalResolved) { mine = append(mine, r) })
	out := &AnswerResult{Resolved: mine}
	if st != nil {
		for _, cs := range st.waiting() {
			if ids[cs.Request.Call.ID] == "" {
				out.Waiting = append(out.Waiting, *cs.Request)
			}
		}
	}
	return out, err
}

// answeredInStep is the first answer to a call of the run's pending step,
// or nil: what a client answering "every call waiting" of a step answered
// already is told.
func answeredInStep(st *runState) *events.ApprovalResolved {
	p := st.pending()
	if p == nil {
		return nil
	}
	for _, c := range p.Message.ToolCalls {
		if cs := st.calls[c.ID]; cs != nil && cs.Answer != nil {
			return cs.Answer
		}
	}
	return nil
}

func (r *AnswerRequest) validate() error {
	for _, id := range []struct{ kind, v string }{{"agent", r.AgentID}, {"session", r.SessionID}, {"run", r.RunID}} {
		if err := events.ValidateID(id.kind, id.v); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidRequest, err)
		}
	}
	switch {
	case !events.ValidAction(r.Action):
		return fmt.Errorf("%w: action %q (want approve, reject or reject_and_continue)", ErrInvalidRequest, r.Action)
	case r.Action != events.ActionApprove && r.Reason == "":
		return fmt.Errorf("%w: %s needs a reason", ErrInvalidRequest, r.Action)
	case r.By.Identity == "":
		return fmt.Errorf("%w: an answer names who gives it (an authenticated identity)", ErrInvalidRequest)
	case r.By.Writer == "":
		return fmt.Errorf("%w: an answer names the NATS user that writes it (its writer)", ErrInvalidRequest)
	case r.By.Channel == events.ChannelExpiry:
		return fmt.Errorf("%w: expiries are recorded by workers, not answered", ErrInvalidRequest)
	case r.AnswerID != "" && r.CallID == "":
		return fmt.Errorf("%w: an answer id is given with the call it answers", ErrInvalidRequest)
	case len(r.Arguments) > 0 && r.Action != events.ActionApprove:
		return fmt.Errorf("%w: edited arguments go with approve, not %s", ErrInvalidRequest, r.Action)
	case len(r.Arguments) > 0 && r.CallID == "":
		return fmt.Errorf("%w: edited arguments are given with the call they are for", ErrInvalidRequest)
	case len(r.Arguments) > 0 && !isObject(r.Arguments):
		return fmt.Errorf("%w: edited arguments %.80q are not a JSON object", ErrInvalidRequest, r.Arguments)
	}
	if r.AnswerID != "" {
		if err := events.ValidateULID("answer", r.AnswerID); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidRequest, err)
		}
	}
	if _, err := events.WriterToken(r.By.Writer); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	return nil
}

func (d AnswerDeps) withDefaults() AnswerDeps {
	if d.Source == "" {
		d.Source = DefaultAnswerSource
	}
	if d.Settle <= 0 {
		d.Settle = DefaultSettle
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	return d
}

// resolution is an answer to record for a call.
type resolution struct {
	cs  *callState
	res events.ApprovalResolved
}

// answering records resolutions of one run's waiting calls.
type answering struct {
	deps                AnswerDeps
	agent, session, run string
	writer              string // the NATS user whose subject they are stored on ("": the plain subject)
}

// record reads the run, asks plan what to record, and appends it fenced on
// the session as read; when the fence refuses (something was stored
// since), it reads again and asks plan again. Each resolution stored is
// given to stored. It returns the run's state as last read.
func (a *answering) record(ctx context.Context, plan func(*runState) ([]resolution, error), stored func(events.ApprovalResolved)) (*runState, error) {
	if a.deps.History == nil || a.deps.Recorder == nil {
		return nil, fmt.Errorf("%w: an answer needs a History and a Recorder", ErrInvalidRequest)
	}
	settleBy := time.Now().Add(a.deps.Settle)
	r := &builder{source: a.deps.Source, req: &events.RunRequest{RunID: a.run, AgentID: a.agent, SessionID: a.session}}
	for tries := 0; ; tries++ {
		evs, err := readRun(ctx, a.deps.History, a.agent, a.session, a.run)
		if err != nil {
			return nil, fmt.Errorf("%w: read session %s/%s: %w", ErrUnrecorded, a.agent, a.session, err)
		}
		sess, st, err := rebuild(evs, a.run)
		if err != nil {
			return nil, err
		}
		switch {
		case !st.found:
			return nil, fmt.Errorf("%w: run %s of %s/%s has no events", ErrBadAnswer, a.run, a.agent, a.session)
		case st.terminal != nil:
			// A call answered before the run ended: name that answer,
			// as for a run still going.
			var first *AnsweredError
			if _, err := plan(st); errors.As(err, &first) {
				first.Ended = st.terminal.Stage
				return st, first
			}
			return st, fmt.Errorf("%w: run %s has ended (%s)", ErrBadAnswer, a.run, st.terminal.Stage)
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
		r.setTrace(st)
		r.req.ParentAgentID, r.req.ParentSessionID, r.req.ParentRunID = lineage(evs, a.run)
		r.step = st.respStep
		chain, seen := st.last, sess.lastSeen
		fenced := false
		for _, t := range todo {
			ev, err := r.event(events.StageApprovalResolved, t.res, t.cs.Request.Call.Name)
			if err != nil {
				return st, err
			}
			next := chain.Next(ev)
			at, err := a.deps.Recorder.AppendAfterAs(ctx, ev, seen, a.writer)
			var c Claimed
			if errors.As(err, &c) {
				fenced = true
				break
			}
			if err != nil {
				return st, fmt.Errorf("%w: approval.resolved of call %s of run %s: %w", ErrUnrecorded, t.res.CallID, a.run, err)
			}
			seen, chain = at, next
			t.cs.Answer, t.cs.Answered = &t.res, ev
			stored(t.res)
		}
		if !fenced {
			return st, nil
		}
		if tries+1 >= maxAnswerTries {
			return st, fmt.Errorf("%w: session %s/%s kept changing while run %s's answer was recorded (%d tries)", ErrUnrecorded, a.agent, a.session, a.run, maxAnswerTries)
		}
	}
}

// lineage is the parent run a run's events name (a sub-agent's run).
func lineage(evs []*events.Event, run string) (agent, session, parent string) {
	for _, e := range evs {
		if e.RunID == run && e.ParentRunID != "" {
			return e.ParentAgentID, e.ParentSessionID, e.ParentRunID
		}
	}
	return "", "", ""
}

// maxBusyDepth bounds how deep busy follows sub-agents.
const maxBusyDepth = 4

// busy names a call of the run's pending step that its attempt is still
// working on ("" when none is): a call with no tool.after that neither
// waits for approval nor calls a sub-agent that waits. An answer recorded
// meanwhile could take a seq that attempt writes next.
func (a *answering) busy(ctx context.Context, st *runState, depth int) (string, error) {
	p := st.pending()
	if p == nil {
		return "", nil
	}
	for _, c := range p.Message.ToolCalls {
		cs := st.calls[c.ID]
		switch {
		case cs == nil:
			return c.ID + " not started", nil
		case cs.Done, cs.Request != nil:
			continue
		case cs.subBefore != nil && cs.subAfter == nil && cs.subFailed == nil:
			waits, err := a.childWaits(ctx, cs.subBefore, depth+1)
			if err != nil {
				return "", err
			}
			if !waits {
				return c.ID + ": sub-agent " + cs.subBefore.AgentID + " running", nil
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
	evs, err := readRun(ctx, a.deps.History, sb.AgentID, sb.SessionID, sb.RunID)
	if err != nil {
		return false, fmt.Errorf("%w: read session %s/%s: %w", ErrUnrecorded, sb.AgentID, sb.SessionID, err)
	}
	_, st, err := rebuild(evs, sb.RunID)
	if err != nil || !st.found || st.terminal != nil || st.pending() == nil {
		return false, nil
	}
	busy, err := a.busy(ctx, st, depth)
	if err != nil || busy != "" {
		return false, err
	}
	p := st.pending()
	for _, c := range p.Message.ToolCalls {
		if cs := st.calls[c.ID]; cs != nil && !cs.Done {
			return true, nil // waits for approval, or for its own child
		}
	}
	return false, nil
}

// isObject reports whether b is a JSON object.
func isObject(b json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil && m != nil && bytes.HasPrefix(bytes.TrimSpace(b), []byte("{"))
}
