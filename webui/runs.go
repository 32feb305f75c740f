package webui

import (
	"sort"
	"strings"
	"time"

	"github.com/hookbus/hookbus/events"
)

// runStages are the stages the runs list folds.
var runStages = []events.Stage{
	events.StageRunStarted, events.StageRunCompleted, events.StageRunFailed,
	events.StageApprovalRequested, events.StageApprovalResolved,
	events.StageHookDecided, events.StageHookFailed,
}

// Run statuses (RunSummary.Status): a run's reason when it completed
// (events.Reason*), or one of these.
const (
	StatusRunning = "running"
	StatusWaiting = "waiting" // a call waits for a human
	StatusFailed  = "failed"  // run.failed
)

// RunSummary is one run in the runs list (GET /api/runs).
type RunSummary struct {
	RunID       string    `json:"run_id"`
	AgentID     string    `json:"agent_id"`
	SessionID   string    `json:"session_id"`
	ParentRunID string    `json:"parent_run_id,omitempty"`
	Prompt      string    `json:"prompt,omitempty"`
	Started     time.Time `json:"started,omitzero"`
	Ended       time.Time `json:"ended,omitzero"`
	// Status is running, waiting, failed, or the reason it completed
	// (done, denied, stopped, rejected, max_steps, cost_limit, interrupted).
	Status string `json:"status"`
	// Detail says why a run that did not end done ended so.
	Detail string `json:"detail,omitempty"`
	Steps  int    `json:"steps,omitempty"`
	Tokens int    `json:"tokens,omitempty"`
	// Decisions counts the interceptors' decisions on the run by kind
	// (allow, modify, deny, ...; "fail" for hook.failed).
	Decisions map[string]int `json:"decisions,omitempty"`
	// Waiting counts the calls waiting for a human.
	Waiting int `json:"waiting,omitempty"`
	// Last is the time of the run's last event read.
	Last time.Time `json:"last,omitzero"`
	// LastSeq is the stream sequence of that event.
	LastSeq uint64 `json:"last_seq,omitempty"`
}

// SessionSummary is one session in the sessions list.
type SessionSummary struct {
	AgentID   string    `json:"agent_id"`
	SessionID string    `json:"session_id"`
	Runs      int       `json:"runs"`
	Waiting   int       `json:"waiting,omitempty"`
	Last      time.Time `json:"last,omitzero"`
}

// runFold folds events of runStages into run summaries.
type runFold struct {
	runs  map[string]*RunSummary
	order []string
	calls map[string]bool // run/call waiting
}

func newRunFold() *runFold {
	return &runFold{runs: map[string]*RunSummary{}, calls: map[string]bool{}}
}

func (f *runFold) add(e *events.Event) {
	if e.RunID == "" {
		return
	}
	r := f.runs[e.RunID]
	if r == nil {
		r = &RunSummary{RunID: e.RunID, AgentID: e.AgentID, SessionID: e.SessionID, ParentRunID: e.ParentRunID, Status: StatusRunning, Started: e.Time}
		f.runs[e.RunID] = r
		f.order = append(f.order, e.RunID)
	}
	r.Last, r.LastSeq = e.Time, e.Stored
	switch e.Stage {
	case events.StageRunStarted:
		var p events.RunStarted
		if e.DecodeData(&p) == nil && !p.Resumed && r.Prompt == "" {
			r.Prompt = p.Prompt
		}
		if r.Status == StatusWaiting && !f.anyWaiting(r.RunID) {
			r.Status = StatusRunning
		}
	case events.StageRunCompleted:
		var p events.RunCompleted
		if e.DecodeData(&p) == nil {
			r.Status, r.Detail, r.Steps = p.Reason, p.Detail, p.Steps
			r.Tokens = p.Usage.InputTokens + p.Usage.OutputTokens
		}
		r.Ended, r.Waiting = e.Time, 0
	case events.StageRunFailed:
		var p events.RunFailed
		if e.DecodeData(&p) == nil {
			r.Detail, r.Steps = p.Error, p.Steps
		}
		r.Status, r.Ended, r.Waiting = StatusFailed, e.Time, 0
	case events.StageApprovalRequested:
		var p events.ApprovalRequested
		if e.DecodeData(&p) == nil && !f.calls[r.RunID+"/"+p.Call.ID] && r.Ended.IsZero() {
			f.calls[r.RunID+"/"+p.Call.ID] = true
			r.Waiting++
			r.Status = StatusWaiting
		}
	case events.StageApprovalResolved:
		var p events.ApprovalResolved
		if e.DecodeData(&p) == nil && f.calls[r.RunID+"/"+p.CallID] {
			delete(f.calls, r.RunID+"/"+p.CallID)
			r.Waiting--
			if r.Waiting == 0 && r.Ended.IsZero() {
				r.Status = StatusRunning
			}
		}
	case events.StageHookDecided:
		var p events.HookDecided
		if e.DecodeData(&p) == nil {
			r.count(p.Decision)
		}
	case events.StageHookFailed:
		r.count("fail")
	}
}

func (f *runFold) anyWaiting(run string) bool {
	for k := range f.calls {
		if strings.HasPrefix(k, run+"/") {
			return true
		}
	}
	return false
}

func (r *RunSummary) count(kind string) {
	if r.Decisions == nil {
		r.Decisions = map[string]int{}
	}
	r.Decisions[kind]++
}

// RunQuery filters the runs list (the query of GET /api/runs).
type RunQuery struct {
	Agent, Session string
	// Status keeps runs of this status; "ended" keeps every ended run,
	// "problem" those that did not end done.
	Status string
	// Text keeps runs whose id, prompt or detail contain it (case folded).
	Text string
	// Limit bounds the runs returned, newest first.
	Limit int
}

func (q RunQuery) match(r *RunSummary) bool {
	switch q.Status {
	case "":
	case "ended":
		if r.Ended.IsZero() {
			return false
		}
	case "problem":
		if r.Status == events.ReasonDone || r.Status == StatusRunning {
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

// list returns the runs matching q, newest first, and the sessions they
// belong to (of every run read, not only those q keeps).
func (f *runFold) list(q RunQuery) ([]*RunSummary, []*SessionSummary) {
	var runs []*RunSummary
	sess := map[string]*SessionSummary{}
	var sessions []*SessionSummary
	for _, id := range f.order {
		r := f.runs[id]
		k := r.AgentID + "/" + r.SessionID
		s := sess[k]
		if s == nil {
			s = &SessionSummary{AgentID: r.AgentID, SessionID: r.SessionID}
			sess[k] = s
			sessions = append(sessions, s)
		}
		s.Runs++
		s.Waiting += r.Waiting
		if r.Last.After(s.Last) {
			s.Last = r.Last
		}
		if q.match(r) {
			runs = append(runs, r)
		}
	}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].Started.After(runs[j].Started) })
	sort.SliceStable(sessions, func(i, j int) bool { return sessions[i].Last.After(sessions[j].Last) })
	if q.Limit > 0 && len(runs) > q.Limit {
		runs = runs[:q.Limit]
	}
	return runs, sessions
}
