package audit

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/record"
)

// Statuses of a run (RunSummary.Status) besides the reasons of
// run.completed (events.ReasonDone, ReasonDenied, ...), which a run that
// ended without an error has.
const (
	// StatusFailed: run.failed ended the run.
	StatusFailed = "failed"
	// StatusWaiting: no terminal event, and a tool call waits for a
	// human's answer (record.Run.Waiting; with a replay narrowed to
	// RunsStages, a call's tool.after is not read).
	StatusWaiting = "waiting"
	// StatusUnfinished: no terminal event and nothing waited for: the run
	// is running, or its worker stopped and the run waits to be resumed.
	StatusUnfinished = "unfinished"
)

// RunRef names a run by its agent, session and id: the lineage of a child
// run (a sub-agent's).
type RunRef struct {
	AgentID   string `json:"agent_id"`
	SessionID string `json:"session_id"`
	RunID     string `json:"run_id"`
}

// RunSummary is one run as the runs list shows it.
type RunSummary struct {
	RunID     string `json:"run_id"`
	AgentID   string `json:"agent_id"`
	SessionID string `json:"session_id"`
	// Parent is the run that called this one (a sub-agent's run); nil for
	// a run nobody called.
	Parent *RunRef `json:"parent,omitempty"`
	// Prompt is the run's intake prompt, as the intake hooks left it.
	Prompt string `json:"prompt,omitempty"`
	// Start is the time of the run's first event, Last the latest event
	// time; DurationMS is Last - Start in milliseconds.
	Start      time.Time `json:"start"`
	Last       time.Time `json:"last"`
	DurationMS int64     `json:"duration_ms"`
	// Steps is the steps the run took (run.completed's count, else the
	// last step completed).
	Steps int `json:"steps"`
	// Ended is set once the run's terminal event (run.completed or
	// run.failed) is read.
	Ended bool `json:"ended"`
	// Status is the run.completed reason (done, denied, stopped, rejected,
	// max_steps, cost_limit, interrupted), or StatusFailed, StatusWaiting
	// or StatusUnfinished.
	Status string `json:"status"`
	// Worker names the worker the run's last attempt ran in (run.started's
	// worker: host:pid, or its configured name); empty for a run no worker
	// ran (a coding agent's session, loop run).
	Worker string `json:"worker,omitempty"`
	// Detail says why: run.completed's detail, run.failed's error.
	Detail string `json:"detail,omitempty"`
	Answer string `json:"answer,omitempty"`
	// Usage is the tokens (and their cost when known) the run used:
	// run.completed's, else the sum of its completed steps'.
	Usage events.Usage `json:"usage"`
	// Events counts the run's events read; Attempts its run.started
	// (more than one: the run was resumed).
	Events   int `json:"events"`
	Attempts int `json:"attempts"`
	// Waiting counts the calls waiting for a human's answer.
	Waiting int `json:"waiting,omitempty"`
	// Children are the runs this one called (sub-agents), by id, in the
	// order they were called.
	Children []string `json:"children,omitempty"`
}

// Duration is Last - Start.
func (r *RunSummary) Duration() time.Duration { return r.Last.Sub(r.Start) }

// runState is a run being folded.
type runState struct {
	RunSummary
	first     int // position among the runs, by first event read
	stepUsage events.Usage
	lastStep  int
	approvals record.Run     // the calls asked of a human, what waits
	decisions map[string]int // hook decisions on the run by kind
}

func (r *runState) add(e *events.Event) {
	r.Events++
	if r.Start.IsZero() || e.Time.Before(r.Start) {
		r.Start = e.Time
	}
	if e.Time.After(r.Last) {
		r.Last = e.Time
	}
	if r.Parent == nil && e.ParentRunID != "" {
		r.Parent = &RunRef{AgentID: e.ParentAgentID, SessionID: e.ParentSessionID, RunID: e.ParentRunID}
	}
	if slices.Contains(record.ApprovalStages, e.Stage) {
		_, _ = r.approvals.Add(e) // an event that does not decode folds nothing
	}
	switch e.Stage {
	case events.StageIntake:
		if p, err := events.Data[events.Intake](e); err == nil {
			r.Prompt = p.Prompt
		}
	case events.StageRunStarted:
		r.Attempts++
		if p, err := events.Data[events.RunStarted](e); err == nil {
			r.Prompt = cmp.Or(r.Prompt, p.Prompt)
			if p.Worker != nil {
				r.Worker = p.Worker.Name
			}
		}
	case events.StageStepCompleted:
		if p, err := events.Data[events.StepCompleted](e); err == nil {
			r.stepUsage = r.stepUsage.Add(p.Usage)
			r.lastStep = max(r.lastStep, p.Step)
		}
	case events.StageHookDecided:
		if p, err := events.Data[events.HookDecided](e); err == nil && !p.Shadow {
			r.count(p.Decision)
		}
	case events.StageHookFailed:
		if p, err := events.Data[events.HookFailed](e); err == nil && p.Outcome != OutcomeShadow {
			r.count(DecisionFail)
		}
	case events.StageSubagentBefore:
		if p, err := events.Data[events.SubagentBefore](e); err == nil && p.RunID != "" && !slices.Contains(r.Children, p.RunID) {
			r.Children = append(r.Children, p.RunID)
		}
	case events.StageRunCompleted:
		if p, err := events.Data[events.RunCompleted](e); err == nil {
			r.Ended, r.Status, r.Detail, r.Answer, r.Steps, r.Usage = true, p.Reason, p.Detail, p.Answer, p.Steps, p.Usage
		}
	case events.StageRunFailed:
		if p, err := events.Data[events.RunFailed](e); err == nil {
			r.Ended, r.Status, r.Detail, r.Steps = true, StatusFailed, p.Error, p.Steps
			r.Usage = r.stepUsage
		}
	}
}

func (r *runState) count(kind string) {
	if r.decisions == nil {
		r.decisions = map[string]int{}
	}
	r.decisions[kind]++
}

// summary is the run as it stands.
func (r *runState) summary() RunSummary {
	s := r.RunSummary
	s.DurationMS = s.Last.Sub(s.Start).Milliseconds()
	s.Waiting = len(r.approvals.Waiting())
	if !s.Ended {
		s.Steps, s.Usage = r.lastStep, r.stepUsage
		s.Status = StatusUnfinished
		if s.Waiting > 0 {
			s.Status = StatusWaiting
		}
	}
	if s.Steps == 0 {
		s.Steps = r.lastStep
	}
	s.Children = append([]string(nil), s.Children...)
	return s
}

// DecisionFail is the kind Runs.Decisions counts a hook.failed as.
const DecisionFail = "fail"

// RunsStages are the stages Runs reads for its summaries and Decisions: a
// replay may be narrowed to them (RunSummary.Events then counts only
// those).
var RunsStages = []events.Stage{
	events.StageIntake, events.StageRunStarted, events.StageStepCompleted,
	events.StageApprovalRequested, events.StageApprovalResolved,
	events.StageHookDecided, events.StageHookFailed,
	events.StageSubagentBefore, events.StageRunCompleted, events.StageRunFailed,
}

// Runs folds events into a summary per run. Feed it events in stream
// order (any interleaving of runs); it keeps one small record per run, so
// it folds a stream of millions of events. The zero value is ready.
type Runs struct {
	byID map[string]*runState
}

// Add folds one event.
func (rs *Runs) Add(e *events.Event) {
	if rs.byID == nil {
		rs.byID = map[string]*runState{}
	}
	r := rs.byID[e.RunID]
	if r == nil {
		r = &runState{RunSummary: RunSummary{RunID: e.RunID, AgentID: e.AgentID, SessionID: e.SessionID}, first: len(rs.byID)}
		rs.byID[e.RunID] = r
	}
	r.add(e)
}

// Len is the number of runs read.
func (rs *Runs) Len() int { return len(rs.byID) }

// Get returns the summary of one run, false when no event of it was read.
func (rs *Runs) Get(runID string) (RunSummary, bool) {
	r, ok := rs.byID[runID]
	if !ok {
		return RunSummary{}, false
	}
	return r.summary(), true
}

// Decisions counts the interceptors' decisions on one run by kind (allow,
// modify, deny, ...; DecisionFail for each hook.failed). A shadow
// registration's records are not counted: they changed nothing. It is nil
// for a run with none, or not read.
func (rs *Runs) Decisions(runID string) map[string]int {
	r, ok := rs.byID[runID]
	if !ok || len(r.decisions) == 0 {
		return nil
	}
	return maps.Clone(r.decisions)
}

// List returns every run, oldest start first (runs that started at the
// same time in the order they were read).
func (rs *Runs) List() []RunSummary {
	states := slices.SortedFunc(maps.Values(rs.byID), func(a, b *runState) int {
		return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.first, b.first))
	})
	out := make([]RunSummary, len(states))
	for i, r := range states {
		out[i] = r.summary()
	}
	return out
}
