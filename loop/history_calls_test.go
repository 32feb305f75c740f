package loop_test

import (
	"fmt"
	"slices"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
)

// What the resume of a recorded history's unfinished run did with each
// tool call of the run's last recorded model reply (resume.calls of the
// expected file).

// pendingCall is one tool call of the reply a resume carries on, and what
// the resume did with it:
//
//	done               its tool.after is in the record; left as it is
//	run                no tool.before in the record: run as a new call
//	run_again          outcome unknown (tool.before, no result), idempotent: run again, no new tool.before
//	unknown            outcome unknown, not idempotent: tool.failed (unknown), not run
//	recorded_result    its tool.result is in the record: tool.after from it, not run
//	recorded_decision  a decision on its recorded tool.before (deny, mock): tool.after from it, not run
//	intercepted        a new tool.before whose hooks answered it: not run
//	waiting            its approval.requested has no answer in the record: it still waits (the run's result lists it)
//	answered           its answer is in the record, but another call of its step waits: not acted on yet
//	approved           its approve is in the record: run, no new tool.before
//	rejected           its reject_and_continue is in the record: tool.after with the reason, not run
//	asked              a new approval.requested: it waits
//	child_resumed      a Task call whose recorded subagent.before's child run was resumed (no new subagent.before) to its end
//	untouched          nothing done (the run ended first)
type pendingCall struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Action string `json:"action"`
}

// callRecord is what some events hold of one tool call.
type callRecord struct {
	before, result, after, unknown bool
	requested, answered            bool
	resolved                       string // the answer's action
	subBefore, subEnd              bool   // a Task call's subagent.before; its subagent.after or subagent.failed
}

// recordOf returns what the events of run in evs hold of call id.
func recordOf(evs []*events.Event, run, id string) callRecord {
	var c callRecord
	for _, e := range evs {
		if e.RunID != run {
			continue
		}
		var p struct {
			Call    events.ToolCall `json:"call"`
			CallID  string          `json:"call_id"`
			Unknown bool            `json:"unknown"`
			Action  string          `json:"action"`
		}
		if e.DecodeData(&p) != nil || p.Call.ID != id && p.CallID != id {
			continue
		}
		switch e.Stage {
		case events.StageToolBefore:
			c.before = true
		case events.StageToolResult:
			c.result = true
		case events.StageToolAfter:
			c.after = true
		case events.StageToolFailed:
			c.unknown = c.unknown || p.Unknown
		case events.StageApprovalRequested:
			c.requested = true
		case events.StageApprovalResolved:
			c.answered, c.resolved = true, p.Action
		case events.StageSubagentBefore:
			c.subBefore = true
		case events.StageSubagentAfter, events.StageSubagentFailed:
			c.subEnd = true
		}
	}
	return c
}

// classifyCalls says what the resume did with each tool call of the run's
// last recorded model reply (see pendingCall). A tool's runs are matched
// by its name (the history's agent's runs only): no recorded reply calls
// one tool twice. A Task call "runs" when a new subagent.before calls a
// child.
func classifyCalls(hist []*events.Event, run string, rp *replayed) []pendingCall {
	var reply *events.ModelResponded
	for _, e := range hist {
		var p events.ModelResponded
		if e.RunID == run && e.Stage == events.StageModelResponded && e.DecodeData(&p) == nil {
			reply = &p
		}
	}
	out := []pendingCall{}
	if reply == nil {
		return out
	}
	for _, c := range reply.Message.ToolCalls {
		rec := recordOf(hist, run, c.ID)
		now := recordOf(rp.appended, run, c.ID)
		ran := slices.ContainsFunc(rp.tools, func(r toolRun) bool { return r.Agent == "" && r.Name == c.Name })
		if c.Name == loop.TaskTool {
			ran = now.subBefore
		}
		waits := rp.res != nil && slices.ContainsFunc(rp.res.Waiting, func(w events.ApprovalRequested) bool { return w.Call.ID == c.ID })
		before, after := now.before, now.after
		var action string
		switch {
		case !before && !after && !ran && rec.after:
			action = "done"
		case !before && !after && !ran && now.requested && waits:
			action = "asked"
		case !before && !after && !ran && rec.requested && !rec.answered && waits:
			action = "waiting"
		case !before && !after && !ran && rec.answered:
			action = "answered"
		case !before && !after && !ran:
			action = "untouched"
		case !before && after && !ran && rec.subBefore && now.subEnd:
			action = "child_resumed"
		case !before && after && ran && rec.resolved == events.ActionApprove:
			action = "approved"
		case !before && after && !ran && rec.resolved == events.ActionRejectAndContinue:
			action = "rejected"
		case before && ran && after:
			action = "run"
		case before && !ran && after:
			action = "intercepted"
		case !before && ran && after:
			action = "run_again"
		case !before && !ran && after && now.unknown:
			action = "unknown"
		case !before && !ran && after && rec.result:
			action = "recorded_result"
		case !before && !ran && after:
			action = "recorded_decision"
		default:
			action = fmt.Sprintf("unexpected (new tool.before %t, ran %t, new tool.after %t)", before, ran, after)
		}
		out = append(out, pendingCall{ID: c.ID, Name: c.Name, Action: action})
	}
	return out
}
