package approval

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/record"
)

// Recorder appends an event to its session on condition that the
// session's last event is still the one at stream sequence seen (the
// session as the caller read it), on the subject of writer (a NATS user;
// "" for the plain subject), and returns the stream sequence it was stored
// at. A refusal because the session changed is an error with a ClaimedBy()
// *events.Event method (*bus.FencedError). *bus.Bus implements it.
type Recorder interface {
	AppendAfterAs(ctx context.Context, e *events.Event, seen uint64, writer string) (uint64, error)
}

// Deps is what Answer and Expire read and write the record with.
type Deps struct {
	History  record.History
	Recorder Recorder
	// Source is the CloudEvent source of the answers (default
	// DefaultSource).
	Source string
	// Settle is how long Answer waits for a run still working on its
	// step's other calls (default DefaultSettle).
	Settle time.Duration
}

// Defaults of Deps.
const (
	DefaultSource = "hookbus/approvals"
	DefaultSettle = 5 * time.Second
)

// Request is an answer to a run's tool calls waiting for approval.
type Request struct {
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

// Result is what an answer recorded.
type Result struct {
	// Resolved are the approval.resolved recorded, one per call answered.
	Resolved []events.ApprovalResolved
	// Waiting are the calls of the step still waiting for an answer. When
	// none is, every call of the step is answered: workers resume the run.
	Waiting []events.ApprovalRequested
}

// Answer records an answer to a run's tool calls waiting for approval: one
// approval.resolved per call, appended after the run's last event (ce-seq
// the next, ce-prevhash its chain hash: record.Chain) on req.By.Writer's
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
// ErrBadAnswer (no such run, a run that ended, no such call waiting),
// ErrInvalid (bad ids, action, reason or actor) or ErrCorruptRun; a failure
// to read or write the record wraps ErrUnrecorded. Nothing is recorded by
// a refusal. With CallID empty, the calls answered before a refusal stay
// answered (Resolved lists them).
func Answer(ctx context.Context, deps Deps, req Request) (*Result, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	req.By.Channel = cmp.Or(req.By.Channel, events.ChannelNATS)
	ids := map[string]string{} // call id → the id of this answer to it
	if req.AnswerID != "" {
		ids[req.CallID] = req.AnswerID
	}
	var want []string // the calls answered, as first read
	var mine []events.ApprovalResolved
	plan := func(st *state) ([]resolution, error) {
		if want == nil {
			if req.CallID != "" {
				want = []string{req.CallID}
			}
			for _, cs := range st.Waiting() {
				if req.CallID == "" {
					want = append(want, cs.Request.Call.ID)
				}
			}
			if len(want) == 0 {
				if first := st.answeredInStep(); first != nil {
					return nil, &AnsweredError{RunID: req.RunID, CallID: first.CallID, First: *first}
				}
				return nil, fmt.Errorf("%w: run %s has no call waiting for approval", ErrBadAnswer, req.RunID)
			}
		}
		var todo []resolution
		now := time.Now().UTC()
		for _, id := range want {
			cs := st.Calls[id]
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
	out := &Result{Resolved: mine}
	if st != nil {
		for _, cs := range st.Waiting() {
			if ids[cs.Request.Call.ID] == "" {
				out.Waiting = append(out.Waiting, *cs.Request)
			}
		}
	}
	return out, err
}

func (r *Request) validate() error {
	for _, id := range []struct{ kind, v string }{{"agent", r.AgentID}, {"session", r.SessionID}, {"run", r.RunID}} {
		if err := events.ValidateID(id.kind, id.v); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
	}
	switch {
	case !events.ValidAction(r.Action):
		return fmt.Errorf("%w: action %q (want approve, reject or reject_and_continue)", ErrInvalid, r.Action)
	case r.Action != events.ActionApprove && r.Reason == "":
		return fmt.Errorf("%w: %s needs a reason", ErrInvalid, r.Action)
	case r.By.Identity == "":
		return fmt.Errorf("%w: an answer names who gives it (an authenticated identity)", ErrInvalid)
	case r.By.Writer == "":
		return fmt.Errorf("%w: an answer names the NATS user that writes it (its writer)", ErrInvalid)
	case r.By.Channel == events.ChannelExpiry:
		return fmt.Errorf("%w: expiries are recorded by workers, not answered", ErrInvalid)
	case r.AnswerID != "" && r.CallID == "":
		return fmt.Errorf("%w: an answer id is given with the call it answers", ErrInvalid)
	case len(r.Arguments) > 0 && r.Action != events.ActionApprove:
		return fmt.Errorf("%w: edited arguments go with approve, not %s", ErrInvalid, r.Action)
	case len(r.Arguments) > 0 && r.CallID == "":
		return fmt.Errorf("%w: edited arguments are given with the call they are for", ErrInvalid)
	case len(r.Arguments) > 0 && !isObject(r.Arguments):
		return fmt.Errorf("%w: edited arguments %.80q are not a JSON object", ErrInvalid, r.Arguments)
	}
	if r.AnswerID != "" {
		if err := events.ValidateULID("answer", r.AnswerID); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
	}
	if _, err := events.WriterToken(r.By.Writer); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

func (d Deps) withDefaults() Deps {
	d.Source = cmp.Or(d.Source, DefaultSource)
	if d.Settle <= 0 {
		d.Settle = DefaultSettle
	}
	return d
}

// isObject reports whether b is a JSON object.
func isObject(b json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil && m != nil && bytes.HasPrefix(bytes.TrimSpace(b), []byte("{"))
}
