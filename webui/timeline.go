package webui

import (
	"encoding/json"
	"time"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/events"
)

// Entry kinds (Entry.Kind): what the page draws an event as, by its
// stage's group (events.Group): the group's name, but "decision" for the
// interceptors' records and "other" for compactions and unknown stages.
const (
	KindRun      = string(events.GroupRun)      // intake, run.started, stop, run.completed, run.failed
	KindStep     = string(events.GroupStep)     // step.started, step.completed
	KindModel    = string(events.GroupModel)    // context.assembled, model.responded, model.failed
	KindTool     = string(events.GroupTool)     // tool.before, tool.result, tool.after, tool.failed
	KindDecision = "decision"                   // hook.decided, hook.failed
	KindApproval = string(events.GroupApproval) // approval.requested, approval.resolved
	KindSubagent = string(events.GroupSubagent) // subagent.*
	KindOther    = "other"                      // compaction and the rest
)

// Entry is one event of a run's timeline.
type Entry struct {
	ID     string       `json:"id"`
	Stage  events.Stage `json:"stage"`
	Kind   string       `json:"kind"`
	Time   time.Time    `json:"time"`
	RunID  string       `json:"run_id"`
	Step   int          `json:"step,omitempty"`
	Seq    uint64       `json:"seq,omitempty"`
	Stored uint64       `json:"stored,omitempty"`
	// Subject is the tool name on tool stages.
	Subject string `json:"subject,omitempty"`
	// Summary is the one-line account observer replay prints.
	Summary string `json:"summary"`
	// Failed marks an event that reports a failure (model.failed,
	// tool.failed, run.failed, hook.failed, ...).
	Failed bool `json:"failed,omitempty"`
	// Decision is set on hook.decided and hook.failed.
	Decision *Decision `json:"decision,omitempty"`
	// Data is the event's payload.
	Data json.RawMessage `json:"data,omitempty"`
	// Child is the child run a subagent.before started, nested.
	Child *RunView `json:"child,omitempty"`
}

// Decision is one interceptor's decision (or failure) on an event.
type Decision struct {
	Plugin string       `json:"plugin"`
	Stage  events.Stage `json:"stage"`
	// Decision is allow, modify, deny, mock, stop, ask or continue; "fail"
	// for hook.failed.
	Decision  string `json:"decision"`
	Reason    string `json:"reason,omitempty"`
	LatencyUS int64  `json:"latency_us"`
	Remote    bool   `json:"remote,omitempty"`
	// Patch is the RFC 6902 patch it made; Diff the change drawn as lines.
	Patch json.RawMessage `json:"patch,omitempty"`
	Diff  *Diff           `json:"diff,omitempty"`
	// EventID is the event decided on.
	EventID  string   `json:"event_id,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// Failure fields (hook.failed).
	FailKind string `json:"fail_kind,omitempty"`
	Policy   string `json:"policy,omitempty"`
	Outcome  string `json:"outcome,omitempty"`
	Error    string `json:"error,omitempty"`
}

// RunView is a run's timeline (GET /api/runs/{run}).
type RunView struct {
	Run     *RunSummary `json:"run"`
	Entries []*Entry    `json:"entries"`
	// Approvals are the run's calls that asked for a human.
	Approvals []*ApprovalView `json:"approvals,omitempty"`
	// Verify is whether the run's record is intact: its hash chain and the
	// signature on its end, checked by audit.Verifier over the events read
	// (nil when only shadow records were read). The page's badge follows
	// its verdict as observer verify does: the problems marked fails fail
	// it; the others are notes.
	Verify *audit.RunVerdict `json:"verify,omitempty"`
	// Truncated is set when the run has more events than were read.
	Truncated bool `json:"truncated,omitempty"`
}

func kindOf(s events.Stage) string {
	switch g := s.Group(); g {
	case events.GroupHook:
		return KindDecision
	case events.GroupCompaction, "":
		return KindOther
	default:
		return string(g)
	}
}

// entryOf turns one event into a timeline entry (without diff or child).
func entryOf(e *events.Event) *Entry {
	en := &Entry{ID: e.ID, Stage: e.Stage, Kind: kindOf(e.Stage), Time: e.Time, RunID: e.RunID, Step: e.Step,
		Seq: e.Seq, Stored: e.Stored, Subject: e.Subject, Summary: e.Summary(), Failed: e.Stage.Failed()}
	if json.Valid(e.Data) {
		en.Data = e.Data
	}
	switch e.Stage {
	case events.StageHookDecided:
		if d, err := events.Data[events.HookDecided](e); err == nil {
			en.Decision = &Decision{Plugin: d.Plugin, Stage: d.Stage, Decision: d.Decision, Reason: d.Reason, LatencyUS: d.LatencyUS,
				Remote: d.Remote, Patch: d.Patch, EventID: d.EventID, Warnings: d.Warnings}
		}
	case events.StageHookFailed:
		if d, err := events.Data[events.HookFailed](e); err == nil {
			en.Decision = &Decision{Plugin: d.Plugin, Stage: d.Stage, Decision: "fail", LatencyUS: d.LatencyUS, EventID: d.EventID,
				FailKind: d.Kind, Policy: d.Policy, Outcome: d.Outcome, Error: d.Error}
		}
	case events.StageRunCompleted:
		if p, err := events.Data[events.RunCompleted](e); err == nil && p.Reason != events.ReasonDone {
			en.Failed = true
		}
	}
	return en
}

// buildView folds one run's events (in stream order) into its timeline,
// the decisions' diffs drawn, and verifies its record with vf (a verifier
// that has read nothing yet: the server's keys and policy).
func buildView(evs []*events.Event, vf audit.Verifier) *RunView {
	v := &RunView{}
	var rs audit.Runs
	var as audit.Approvals
	for _, e := range evs {
		rs.Add(e)
		as.Add(e)
		vf.Add(e)
		v.Entries = append(v.Entries, entryOf(e))
	}
	if len(evs) > 0 {
		if r, ok := rs.Get(evs[0].RunID); ok {
			v.Run = summaryOf(&rs, r)
		}
		if vs := vf.Verdicts(); len(vs) > 0 {
			v.Verify = vs[0]
		}
	}
	for _, a := range as.All() {
		v.Approvals = append(v.Approvals, approvalView(a))
	}
	drawDiffs(evs, v.Entries)
	return v
}
