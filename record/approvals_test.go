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
