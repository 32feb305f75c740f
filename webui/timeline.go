package webui

import (
	"encoding/json"
	"time"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/events"
)

// Entry kinds (Entry.Kind): what the page draws an event as.
const (
	KindRun      = "run"      // intake, run.started, stop, run.completed, run.failed
	KindStep     = "step"     // step.started, step.completed
	KindModel    = "model"    // context.assembled, model.responded, model.failed
	KindTool     = "tool"     // tool.before, tool.result, tool.after, tool.failed
	KindDecision = "decision" // hook.decided, hook.failed
	KindApproval = "approval" // approval.requested, approval.resolved
	KindSubagent = "subagent" // subagent.*
	KindOther    = "other"    // compaction and the rest
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
	switch s {
	case events.StageIntake, events.StageRunStarted, events.StageStop, events.StageRunCompleted, events.StageRunFailed:
		return KindRun
	case events.StageStepStarted, events.StageStepCompleted:
		return KindStep
	case events.StageContextAssembled, events.StageModelResponded, events.StageModelFailed:
		return KindModel
	case events.StageToolBefore, events.StageToolResult, events.StageToolAfter, events.StageToolFailed:
		return KindTool
	case events.StageHookDecided, events.StageHookFailed:
		return KindDecision
	case events.StageApprovalRequested, events.StageApprovalResolved:
		return KindApproval
	case events.StageSubagentBefore, events.StageSubagentAfter, events.StageSubagentFailed:
		return KindSubagent
	}
	return KindOther
}

func failed(s events.Stage) bool {
	switch s {
	case events.StageModelFailed, events.StageToolFailed, events.StageRunFailed, events.StageHookFailed,
		events.StageSubagentFailed, events.StageCompactFailed:
		return true
	}
	return false
}

// entryOf turns one event into a timeline entry (without diff or child).
func entryOf(e *events.Event) *Entry {
	en := &Entry{ID: e.ID, Stage: e.Stage, Kind: kindOf(e.Stage), Time: e.Time, RunID: e.RunID, Step: e.Step,
		Seq: e.Seq, Stored: e.Stored, Subject: e.Subject, Summary: e.Summary(), Failed: failed(e.Stage)}
	if json.Valid(e.Data) {
		en.Data = e.Data
	}
	switch e.Stage {
	case events.StageHookDecided:
		var d events.HookDecided
		if e.DecodeData(&d) == nil {
			en.Decision = &Decision{Plugin: d.Plugin, Stage: d.Stage, Decision: d.Decision, Reason: d.Reason, LatencyUS: d.LatencyUS,
				Remote: d.Remote, Patch: d.Patch, EventID: d.EventID, Warnings: d.Warnings}
		}
	case events.StageHookFailed:
		var d events.HookFailed
		if e.DecodeData(&d) == nil {
			en.Decision = &Decision{Plugin: d.Plugin, Stage: d.Stage, Decision: "fail", LatencyUS: d.LatencyUS, EventID: d.EventID,
				FailKind: d.Kind, Policy: d.Policy, Outcome: d.Outcome, Error: d.Error}
		}
	case events.StageRunCompleted:
		var p events.RunCompleted
		if e.DecodeData(&p) == nil && p.Reason != events.ReasonDone {
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
