package audit

import (
	"sort"
	"time"

	"github.com/hookbus/hookbus/events"
)

// SessionSummary is one session as the sessions list shows it.
type SessionSummary struct {
	AgentID   string `json:"agent_id"`
	SessionID string `json:"session_id"`
	// Parent is the run that called the session's first run, for a
	// sub-agent's session; nil otherwise.
	Parent *RunRef `json:"parent,omitempty"`
	// Runs counts the session's runs; Events its events read.
	Runs   int `json:"runs"`
	Events int `json:"events"`
	// First and LastActivity are the times of its first and latest event.
	First        time.Time `json:"first"`
	LastActivity time.Time `json:"last_activity"`
	// LastRunID and LastStatus are the session's latest run (by start)
	// and its status (RunSummary.Status).
	LastRunID  string `json:"last_run_id"`
	LastStatus string `json:"last_status"`
	// Usage is the sum of its runs' usage.
	Usage events.Usage `json:"usage"`
}

// Sessions folds events into a summary per session (agent and session
// id). Feed it events in stream order; it keeps one small record per run.
// The zero value is ready.
type Sessions struct {
	runs Runs
}

// Add folds one event.
func (ss *Sessions) Add(e *events.Event) { ss.runs.Add(e) }

// List returns every session, the least recently active first (the most
// recent last, nearest the prompt).
func (ss *Sessions) List() []SessionSummary { return SessionsOf(ss.runs.List()) }

// SessionsOf groups run summaries (as Runs.List returns them, oldest start
// first) into their sessions, as Sessions.List does: for a caller that
// folded the runs already.
func SessionsOf(runs []RunSummary) []SessionSummary {
	type key struct{ agent, session string }
	by := map[key]*SessionSummary{}
	var order []key
	for _, r := range runs {
		k := key{r.AgentID, r.SessionID}
		s := by[k]
		if s == nil {
			s = &SessionSummary{AgentID: r.AgentID, SessionID: r.SessionID, Parent: r.Parent, First: r.Start}
			by[k] = s
			order = append(order, k)
		}
		s.Runs++
		s.Events += r.Events
		s.Usage = s.Usage.Add(r.Usage)
		if r.Start.Before(s.First) {
			s.First = r.Start
		}
		if r.Last.After(s.LastActivity) {
			s.LastActivity = r.Last
		}
		s.LastRunID, s.LastStatus = r.RunID, r.Status
	}
	out := make([]SessionSummary, 0, len(order))
	for _, k := range order {
		out = append(out, *by[k])
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].LastActivity.Before(out[j].LastActivity) })
	return out
}
