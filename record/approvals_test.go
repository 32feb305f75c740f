package record_test

import (
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/record"
)

// What waits for a human, by what the run's record says after the
// request.
func TestRunWaiting(t *testing.T) {
	call := events.ToolCall{ID: "c1", Name: "Bash", Arguments: []byte(`{"command":"ls"}`)}
	ev := func(st events.Stage, step int, p any) *events.Event {
		t.Helper()
		e, err := events.New(st, events.Meta{Source: "test", AgentID: "a", SessionID: "s", RunID: "r", Step: step, Seq: 1}, p)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	asked := func(step int) *events.Event {
		return ev(events.StageApprovalRequested, step, events.ApprovalRequested{Call: call})
	}
	answer := ev(events.StageApprovalResolved, 1, events.ApprovalResolved{CallID: "c1", Approved: true, Action: events.ActionApprove})
	for _, tc := range []struct {
		name  string
		evs   []*events.Event
		waits bool
	}{
		{"asked in the step under way", []*events.Event{ev(events.StageStepCompleted, 1, events.StepCompleted{Step: 1}), asked(2)}, true},
		{"asked with no step completed (a coding agent's run)", []*events.Event{asked(0)}, true},
		{"answered", []*events.Event{asked(1), answer}, false},
		{"done without an answer", []*events.Event{asked(0), ev(events.StageToolAfter, 0, events.ToolAfter{Call: call})}, false},
		{"of a step completed", []*events.Event{asked(1), ev(events.StageStepCompleted, 1, events.StepCompleted{Step: 1})}, false},
		{"of an ended run", []*events.Event{asked(1), ev(events.StageRunFailed, 1, events.RunFailed{Error: "killed"})}, false},
		{"an answer to no request", []*events.Event{answer}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r record.Run
			for _, e := range tc.evs {
				if _, err := r.Add(e); err != nil {
					t.Fatal(err)
				}
			}
			if got := len(r.Waiting()) == 1; got != tc.waits {
				t.Fatalf("waits = %v, want %v (waiting %v)", got, tc.waits, r.Waiting())
			}
		})
	}
}

// A later attempt's run.started supersedes what an earlier attempt wrote
// after it read the record, whether the run's events come effective or as
// stored, or from its first request on.
func TestRunSuperseded(t *testing.T) {
	c1, c2 := events.ToolCall{ID: "c1", Name: "Bash"}, events.ToolCall{ID: "c2", Name: "Bash"}
	ev := func(st events.Stage, step int, seq uint64, p any) *events.Event {
		t.Helper()
		e, err := events.New(st, events.Meta{Source: "test", AgentID: "a", SessionID: "s", RunID: "r", Step: step, Seq: seq}, p)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	stored := []*events.Event{
		ev(events.StageRunStarted, 0, 1, events.RunStarted{Prompt: "p"}),
		ev(events.StageApprovalRequested, 1, 2, events.ApprovalRequested{Call: c1}),
		ev(events.StageApprovalResolved, 1, 3, events.ApprovalResolved{CallID: "c1", Approved: true, Action: events.ActionApprove}),
		ev(events.StageToolAfter, 1, 4, events.ToolAfter{Call: c1}),
		ev(events.StageStepCompleted, 1, 5, events.StepCompleted{Step: 1}),
		ev(events.StageApprovalRequested, 2, 6, events.ApprovalRequested{Call: c2}),
		ev(events.StageRunStarted, 0, 3, events.RunStarted{Prompt: "p"}), // read up to seq 2
	}
	for i, e := range stored {
		e.Stored = uint64(i + 1)
	}
	for name, evs := range map[string][]*events.Event{"as stored": stored, "effective": record.Effective(stored), "from the first request": stored[1:]} {
		var r record.Run
		for _, e := range evs {
			if _, err := r.Add(e); err != nil {
				t.Fatal(err)
			}
		}
		var waiting []string
		for _, c := range r.Waiting() {
			waiting = append(waiting, c.ID)
		}
		if len(waiting) != 1 || waiting[0] != "c1" || len(r.Asked()) != 1 {
			t.Fatalf("%s: waiting %v, asked %d; want [c1] (its answer, its step and c2 superseded), 1", name, waiting, len(r.Asked()))
		}
	}
}
