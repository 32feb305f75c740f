package loop_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/record/approval"
)

// An approver who edits the call's arguments: the call runs with them,
// and the answer records them. Edited arguments go with approve and a
// call, as a JSON object.
func TestApprovalWithEditedArguments(t *testing.T) {
	j := looptest.New()
	calc := &countingTool{name: "calculator", answer: "42"}
	tools := []loop.Tool{&countingTool{name: "clock", answer: "noon"}, calc}
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
	if res, err := newEngine(t, j, loop.Config{Hooks: asker(t), Tools: tools}).Run(ctxT(t), req); err != nil || res.Reason != loop.ReasonWaiting {
		t.Fatalf("first attempt: %+v, %v", res, err)
	}
	answer := func(r approval.Request) (*approval.Result, error) {
		r.AgentID, r.SessionID, r.RunID, r.By = req.AgentID, req.SessionID, req.RunID, person("alice")
		return approval.Answer(ctxT(t), approval.Deps{History: j, Recorder: j, Settle: time.Second}, r)
	}
	for _, bad := range []approval.Request{
		{CallID: "call_1_2", Action: events.ActionReject, Reason: "no", Arguments: json.RawMessage(`{"expr":"1"}`)},
		{Action: events.ActionApprove, Arguments: json.RawMessage(`{"expr":"1"}`)},
		{CallID: "call_1_2", Action: events.ActionApprove, Arguments: json.RawMessage(`[1]`)},
	} {
		if _, err := answer(bad); !errors.Is(err, approval.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalidRequest", bad, err)
		}
	}
	n := len(j.Events())
	if _, err := answer(approval.Request{CallID: "call_1_2", Action: events.ActionApprove, Arguments: json.RawMessage(`{"expr":"6*7"}`)}); err != nil {
		t.Fatal(err)
	}
	res, _, err := resumeFromRecord(t, j, newEngine(t, j, loop.Config{Tools: tools, Queue: &queue{}}), n)
	if err != nil || res == nil || !res.Ended {
		t.Fatalf("resumed: %+v, %v", res, err)
	}
	evs := j.Events()
	resolved := payloadsOf[events.ApprovalResolved](t, evs, events.StageApprovalResolved)
	if len(resolved) != 1 || string(resolved[0].Arguments) != `{"expr":"6*7"}` {
		t.Fatalf("approval.resolved %+v", resolved)
	}
	for _, ta := range payloadsOf[events.ToolAfter](t, evs, events.StageToolAfter) {
		if ta.Call.Name == "calculator" && string(ta.Call.Arguments) != `{"expr":"6*7"}` {
			t.Fatalf("the calculator ran with %s, not the edited arguments", ta.Call.Arguments)
		}
	}
	if calc.calls.Load() != 1 {
		t.Fatalf("the calculator ran %d times", calc.calls.Load())
	}
}

// A run recorded by the bridge has no model reply (the coding agent's
// loop is its own): its calls waiting for approval are answered without
// naming them, as observer approve RUN does.
func TestAnswerToARunWithoutReplies(t *testing.T) {
	j := looptest.New()
	run := events.NewID()
	var seq uint64
	var prev string
	add := func(st events.Stage, payload any) {
		seq++
		e, err := events.New(st, events.Meta{Source: "hookbus/claude-code", AgentID: "claude-code", SessionID: "s1", RunID: run, Seq: seq}, payload)
		if err != nil {
			t.Fatal(err)
		}
		e.PrevHash, prev = prev, e.ChainHash()
		j.Load(e)
	}
	call := events.ToolCall{ID: "toolu_1", Name: "Bash", Arguments: json.RawMessage(`{"command":"ls"}`)}
	add(events.StageRunStarted, events.RunStarted{})
	add(events.StageToolBefore, events.ToolBefore{Call: call})
	add(events.StageApprovalRequested, events.ApprovalRequested{Call: call, Reason: "Claude Code asks for permission"})
	res, err := approval.Answer(ctxT(t), approval.Deps{History: j, Recorder: j, Settle: time.Second}, approval.Request{
		AgentID: "claude-code", SessionID: "s1", RunID: run, Action: events.ActionApprove, By: person("alice")})
	if err != nil || len(res.Resolved) != 1 || res.Resolved[0].CallID != "toolu_1" || len(res.Waiting) != 0 {
		t.Fatalf("answer: %+v, %v", res, err)
	}
}
