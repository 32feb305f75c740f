package record_test

import (
	"fmt"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/record"
)

// A run's record says which of its calls wait for a human: here the call
// asked in the step under way, not the one answered.
func ExampleRun() {
	var r record.Run
	for i, p := range []any{
		events.ApprovalRequested{Call: events.ToolCall{ID: "c1", Name: "Bash"}},
		events.ApprovalRequested{Call: events.ToolCall{ID: "c2", Name: "Write"}},
		events.ApprovalResolved{CallID: "c1", Approved: true, Action: events.ActionApprove},
	} {
		st := events.StageApprovalRequested
		if _, ok := p.(events.ApprovalResolved); ok {
			st = events.StageApprovalResolved
		}
		e, err := events.New(st, events.Meta{Source: "example", AgentID: "a", SessionID: "s", RunID: "r", Step: 1, Seq: uint64(i + 1)}, p)
		if err != nil {
			panic(err)
		}
		if _, err := r.Add(e); err != nil {
			panic(err)
		}
	}
	for _, c := range r.Waiting() {
		fmt.Println(c.ID, c.Request.Call.Name, "waits")
	}
	// Output: c2 Write waits
}
