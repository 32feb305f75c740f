package audit

import (
	"slices"
	"sort"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/record"
)

// ApprovalStages are the stages Approvals reads (record.ApprovalStages):
// the approvals, and what says whether a call still waits.
var ApprovalStages = record.ApprovalStages

// Approval is one tool call that waited (or waits) for a human.
type Approval struct {
	AgentID, SessionID, RunID string
	// Source is the request's CloudEvent source: "hookbus/loop" for an
	// engine's run, the bridge's ("hookbus/claude-code", ...) for a coding
	// agent's permission request.
	Source string
	// Requested is the request, RequestedAt its event's time.
	Requested   events.ApprovalRequested
	RequestedAt time.Time
	// Resolved is the answer, nil while the call waits: the first one
	// recorded (a later one changes nothing).
	Resolved *events.ApprovalResolved
	// IdentityProblem says how the answer's record does not bind who it
	// names to the NATS user that wrote it (events.Actor.CheckWriter);
	// empty when it does, or the call waits.
	IdentityProblem string
	// RunEnded is set when the run ended (it waits for nothing then).
	RunEnded bool

	asked *events.Event // the request's event
	waits bool
}

// Waiting reports whether the call waits for an answer: as record.Run.Waits
// says, the rule an answer is held to.
func (a *Approval) Waiting() bool { return a.waits }

// Approvals folds events (any order of runs; each run's in its order) into
// the approvals they record, each run's by record.Run: what an attempt
// that a later one superseded wrote does not count. The zero value is
// ready; Add the events.
type Approvals struct {
	runs  map[string]*record.Run
	order []string              // the runs, in the order first added
	at    map[*events.Event]int // each request's place among those added
}

// Add folds one event; other stages are ignored, and so are the events of
// a run before its first approval.requested (a run that asks nothing
// costs nothing).
func (as *Approvals) Add(e *events.Event) {
	r := as.runs[e.RunID]
	if !slices.Contains(ApprovalStages, e.Stage) {
		return
	}
	if r == nil {
		if e.Stage != events.StageApprovalRequested {
			return
		}
		if as.runs == nil {
			as.runs, as.at = map[string]*record.Run{}, map[*events.Event]int{}
		}
		r = &record.Run{}
		as.runs[e.RunID] = r
		as.order = append(as.order, e.RunID)
	}
	if c, err := r.Add(e); err == nil && c != nil && c.Asked == e {
		as.at[e] = len(as.at)
	}
}

// All returns every approval, in the order they were requested.
func (as *Approvals) All() []*Approval {
	out := []*Approval{}
	for _, id := range as.order {
		r := as.runs[id]
		for _, c := range r.Asked() {
			e := c.Asked
			a := &Approval{AgentID: e.AgentID, SessionID: e.SessionID, RunID: e.RunID, Source: e.Source,
				Requested: *c.Request, RequestedAt: e.Time, Resolved: c.Answer, RunEnded: r.Ended() != nil,
				asked: e, waits: r.Waits(c)}
			if c.Answer != nil {
				if err := c.Answer.Actor.CheckWriter(c.Answered.Writer); err != nil {
					a.IdentityProblem = err.Error()
				}
			}
			out = append(out, a)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return as.at[out[i].asked] < as.at[out[j].asked] })
	return out
}

// Pending returns the calls waiting for an answer, oldest first.
func (as *Approvals) Pending() []*Approval {
	out := slices.DeleteFunc(as.All(), func(a *Approval) bool { return !a.Waiting() })
	sort.SliceStable(out, func(i, j int) bool { return out[i].RequestedAt.Before(out[j].RequestedAt) })
	return out
}

// Of returns the approvals of one run.
func (as *Approvals) Of(runID string) []*Approval {
	return slices.DeleteFunc(as.All(), func(a *Approval) bool { return a.RunID != runID })
}
