package audit_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/record/approval"
)

// supersededRequest is a run whose first attempt asked a human about call
// c1 (seq 5) after a second attempt had read the record up to seq 4 and
// taken the run over: the takeover's run.started takes seq 5 and is stored
// after the request, which it supersedes (events.Superseded). The second
// attempt asks about c2 instead.
func supersededRequest(t *testing.T) []*events.Event {
	t.Helper()
	c1 := events.ToolCall{ID: "c1", Name: "Bash", Arguments: []byte(`{"command":"rm -rf build"}`)}
	c2 := events.ToolCall{ID: "c2", Name: "Bash", Arguments: []byte(`{"command":"make clean"}`)}
	var out []*events.Event
	add := func(st events.Stage, step int, seq uint64, p any) {
		t.Helper()
		e, err := events.New(st, events.Meta{Source: "hookbus/loop", AgentID: "a", SessionID: "s", RunID: "01KDYDK349A800000000000009", Step: step, Seq: seq}, p)
		if err != nil {
			t.Fatal(err)
		}
		e.Stored = uint64(len(out) + 1)
		out = append(out, e)
	}
	reply := func(c events.ToolCall) events.ModelResponded {
		return events.ModelResponded{Message: events.Message{Role: events.RoleAssistant, ToolCalls: []events.ToolCall{c}}}
	}
	add(events.StageRunStarted, 0, 1, events.RunStarted{Prompt: "clean up"})
	add(events.StageStepStarted, 1, 2, events.StepStarted{Step: 1})
	add(events.StageModelResponded, 1, 3, reply(c1))
	add(events.StageToolBefore, 1, 4, events.ToolBefore{Call: c1})
	add(events.StageApprovalRequested, 1, 5, events.ApprovalRequested{Call: c1, Reason: "a human"})
	add(events.StageRunStarted, 0, 5, events.RunStarted{Prompt: "clean up"}) // the takeover
	add(events.StageStepStarted, 1, 6, events.StepStarted{Step: 1})
	add(events.StageModelResponded, 1, 7, reply(c2))
	add(events.StageToolBefore, 1, 8, events.ToolBefore{Call: c2})
	add(events.StageApprovalRequested, 1, 9, events.ApprovalRequested{Call: c2, Reason: "a human"})
	return out
}

// A request that a takeover superseded waits for nobody: the approvals and
// the run's summary count only the takeover's request, and an answer is
// given to it and refused for the superseded one, as listed.
func TestApprovalsSupersededRequestWaitsForNobody(t *testing.T) {
	evs := supersededRequest(t)
	var as audit.Approvals
	var rs audit.Runs
	for _, e := range evs {
		as.Add(e)
		rs.Add(e)
	}
	if r, _ := rs.Get(evs[0].RunID); r.Waiting != 1 || r.Status != audit.StatusWaiting {
		t.Fatalf("run summary: %d calls waiting, status %s; want 1, waiting", r.Waiting, r.Status)
	}
	var waiting []string
	for _, a := range as.Pending() {
		waiting = append(waiting, a.Requested.Call.ID)
	}
	if len(waiting) != 1 || waiting[0] != "c2" {
		t.Fatalf("waiting calls %v, want [c2] (c1's request was superseded)", waiting)
	}

	j := looptest.New()
	j.Load(evs...)
	deps := approval.Deps{History: j, Recorder: j}
	req := approval.Request{AgentID: "a", SessionID: "s", RunID: evs[0].RunID, Action: events.ActionApprove,
		By: events.Actor{Identity: "alice", Writer: "alice"}}
	for _, a := range as.All() {
		req.CallID = a.Requested.Call.ID
		_, err := approval.Answer(context.Background(), deps, req)
		if a.Waiting() != (err == nil) {
			t.Fatalf("call %s: listed waiting %v, but its answer: %v", req.CallID, a.Waiting(), err)
		}
	}
	req.CallID = "c1"
	if _, err := approval.Answer(context.Background(), deps, req); !errors.Is(err, approval.ErrBadAnswer) {
		t.Fatalf("answer to the superseded request: %v, want ErrBadAnswer", err)
	}
}
