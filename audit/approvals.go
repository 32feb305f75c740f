package audit

import (
	"sort"
	"time"

	"github.com/hookbus/hookbus/events"
)

// ApprovalStages are the stages Approvals reads: the approvals' and the
// runs' ends (a call of an ended run waits for nothing).
var ApprovalStages = append(events.StagesOf(events.GroupApproval), events.TerminalStages()...)

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
}

// Waiting reports whether the call waits for an answer.
func (a *Approval) Waiting() bool { return a.Resolved == nil && !a.RunEnded }

// Approvals folds events (any order of runs; each run's in its order) into
// the approvals they record. The zero value is ready; Add the events.
type Approvals struct {
	byKey map[string]*Approval // run/call
	order []string
	ended map[string]bool
}

// Add folds one event; other stages are ignored.
func (as *Approvals) Add(e *events.Event) {
	if as.byKey == nil {
		as.byKey, as.ended = map[string]*Approval{}, map[string]bool{}
	}
	switch {
	case e.Stage == events.StageApprovalRequested:
		p, err := events.Data[events.ApprovalRequested](e)
		if err != nil || p.Call.ID == "" {
			return
		}
		k := e.RunID + "/" + p.Call.ID
		if _, ok := as.byKey[k]; ok {
			return
		}
		as.byKey[k] = &Approval{AgentID: e.AgentID, SessionID: e.SessionID, RunID: e.RunID, Source: e.Source, Requested: p, RequestedAt: e.Time, RunEnded: as.ended[e.RunID]}
		as.order = append(as.order, k)
	case e.Stage == events.StageApprovalResolved:
		p, err := events.Data[events.ApprovalResolved](e)
		if err != nil {
			return
		}
		if a := as.byKey[e.RunID+"/"+p.CallID]; a != nil && a.Resolved == nil {
			a.Resolved = &p
			if err := p.Actor.CheckWriter(e.Writer); err != nil {
				a.IdentityProblem = err.Error()
			}
		}
	case e.Stage.Terminal():
		as.ended[e.RunID] = true
		for _, k := range as.order {
			if a := as.byKey[k]; a.RunID == e.RunID {
				a.RunEnded = true
			}
		}
	}
}

// All returns every approval, in the order they were requested.
func (as *Approvals) All() []*Approval {
	out := make([]*Approval, 0, len(as.order))
	for _, k := range as.order {
		out = append(out, as.byKey[k])
	}
	return out
}

// Pending returns the calls waiting for an answer, oldest first.
func (as *Approvals) Pending() []*Approval {
	var out []*Approval
	for _, a := range as.All() {
		if a.Waiting() {
			out = append(out, a)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].RequestedAt.Before(out[j].RequestedAt) })
	return out
}

// Of returns the approvals of one run.
func (as *Approvals) Of(runID string) []*Approval {
	var out []*Approval
	for _, a := range as.All() {
		if a.RunID == runID {
			out = append(out, a)
		}
	}
	return out
}
