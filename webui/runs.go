package webui

import (
	"strings"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/events"
)

// StatusRunning is accepted by the runs list's status filter as a synonym
// of audit.StatusUnfinished (the page shows such a run as running).
const StatusRunning = "running"

// RunSummary is one run in the runs list (GET /api/runs): audit's summary,
// as observer runs --json prints it, and the interceptors' decisions on the
// run.
type RunSummary struct {
	audit.RunSummary
	// Decisions counts the interceptors' decisions on the run by kind
	// (allow, modify, deny, ...; "fail" for hook.failed): audit.Runs.Decisions.
	Decisions map[string]int `json:"decisions,omitempty"`
	// Worker is the worker the run's last attempt runs in, as its
	// run.started records it (loop serve records it).
	Worker *events.Worker `json:"worker,omitempty"`
	// Abandoned is set on an unfinished run that no attempt holds any
	// more (see Config.Fleet): the page says so instead of running.
	Abandoned bool `json:"abandoned,omitempty"`
}

// SessionSummary is one session in the sessions list: audit's summary and
// the calls of its runs waiting for a human.
type SessionSummary struct {
	audit.SessionSummary
	Waiting int `json:"waiting,omitempty"`
}

// summaryOf is run r of rs with its decisions.
func summaryOf(rs *audit.Runs, r audit.RunSummary) *RunSummary {
	return &RunSummary{RunSummary: r, Decisions: rs.Decisions(r.RunID)}
}

// RunQuery filters the runs list (the query of GET /api/runs).
type RunQuery struct {
	// Status keeps runs of this status (audit.RunSummary.Status; "running"
	// for unfinished); "ended" keeps every ended run, "problem" those that
	// ended other than done.
	Status string
	// Text keeps runs whose id, prompt or detail contain it (case folded).
	Text string
	// Limit bounds the runs returned, newest first.
	Limit int
}

func (q RunQuery) match(r *audit.RunSummary) bool {
	switch q.Status {
	case "":
	case "ended":
		if !r.Ended {
			return false
		}
	case "problem":
		if !r.Ended || r.Status == events.ReasonDone {
			return false
		}
	case StatusRunning:
		if r.Status != audit.StatusUnfinished {
			return false
		}
	default:
		if r.Status != q.Status {
			return false
		}
	}
	if q.Text != "" {
		t := strings.ToLower(q.Text)
		if !strings.Contains(strings.ToLower(r.RunID+"\n"+r.Prompt+"\n"+r.Detail+"\n"+r.AgentID+"\n"+r.SessionID), t) {
			return false
		}
	}
	return true
}

// listRuns returns the runs of rs matching q, newest first, and the
// sessions of every run read (not only those q keeps), the most recently
// active first.
func listRuns(rs *audit.Runs, q RunQuery) ([]*RunSummary, []*SessionSummary) {
	all := rs.List() // oldest start first
	waiting := map[[2]string]int{}
	var runs []*RunSummary
	for i := len(all) - 1; i >= 0; i-- {
		r := all[i]
		waiting[[2]string{r.AgentID, r.SessionID}] += r.Waiting
		if q.match(&r) && (q.Limit <= 0 || len(runs) < q.Limit) {
			runs = append(runs, summaryOf(rs, r))
		}
	}
	ss := audit.SessionsOf(all) // least recently active first
	sessions := make([]*SessionSummary, 0, len(ss))
	for i := len(ss) - 1; i >= 0; i-- {
		sessions = append(sessions, &SessionSummary{SessionSummary: ss[i], Waiting: waiting[[2]string{ss[i].AgentID, ss[i].SessionID}]})
	}
	return runs, sessions
}
