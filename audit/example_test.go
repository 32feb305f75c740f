package audit_test

import (
	"fmt"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/audit/audittest"
)

// Runs, Show and Stats fed from one pass over a stream (here a recorded
// one; bus.Replay's callback in a program).
func Example() {
	evs, err := audittest.Load("subagent")
	if err != nil {
		panic(err)
	}
	var runs audit.Runs
	var stats audit.Stats
	show := audit.NewShow("01KDYBK349A8") // a prefix of a run id
	for _, e := range evs {
		runs.Add(e)
		stats.Add(e)
		show.Add(e)
	}
	for _, r := range runs.List() {
		fmt.Println(r.AgentID, r.Status, r.Steps, "steps", len(r.Children), "children")
	}
	tree, err := show.Tree(show.Runs()[0])
	if err != nil {
		panic(err)
	}
	for _, it := range tree.Items[2].Items {
		fmt.Println(it.Kind, it.Text)
		for _, sub := range it.Items {
			fmt.Println("   ", sub.Kind, sub.Text, "→ child run of", sub.Child.Run.AgentID)
		}
	}
	// Output:
	// demo done 2 steps 1 children
	// helper done 2 steps 0 children
	// demo done 2 steps 1 children
	// helper done 2 steps 0 children
	// context context: 1 messages, 3 tools
	// model model "Let me ask the helper." → calls Task (6+5 tokens)
	// tool tool Task {"description":"a task","prompt":"what is 6*7","subagent_type":"helper"} → "what is 6*7: 42"
	//     subagent sub-agent helper "what is 6*7" → done "what is 6*7: 42" (7+4 tokens) → child run of helper
}
