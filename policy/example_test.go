package policy_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/policy"
)

// One policy refuses `rm -rf` whichever agent runs it: here Gemini CLI's
// run_shell_command, read as an action of kind shell.
func Example() {
	src := []byte(`
name: no-destructive-shell
match:
  kinds: [shell]
validations:
- name: rm-rf
  expression: '!action.command.matches("\\brm\\s+-[a-zA-Z]*r[a-zA-Z]*f")'
  message: refused a recursive forced delete
`)
	ps, err := policy.Parse("no-rm.yaml", src)
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := policy.Compile(ps[0])
	if err != nil {
		fmt.Println(err)
		return
	}

	call := events.ToolCall{ID: "call_1", Name: "run_shell_command",
		Arguments: json.RawMessage(`{"command":"rm -rf victim"}`)}.WithAction(events.HarnessGemini)
	ev, _ := events.New(events.StageToolBefore, events.Meta{Source: "hookbus/gemini-cli", AgentID: "gemini-cli",
		SessionID: "s1", RunID: "r1"}, events.ToolBefore{Call: call})

	in, _ := policy.InputFrom(ev, "")
	res, err := c.Evaluate(context.Background(), in)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Decision.Kind, "-", res.Decision.Reason)
	fmt.Println("harness:", in.Harness, "rule:", res.Hit.Rule, "saw:", res.Hit.Values)
	// Output:
	// deny - refused a recursive forced delete (policy no-destructive-shell)
	// harness: gemini rule: rm-rf saw: map[action.command:"rm -rf victim"]
}

// A mistake is refused when the policy is compiled, named at its place in
// the file.
func ExampleCompile() {
	ps, _ := policy.Parse("typo.yaml", []byte(`name: typo
validations:
- expression: '!action.comand.contains("rm")'
`))
	_, err := policy.Compile(ps[0])
	fmt.Println(err)
	// Output:
	// policy: invalid: typo.yaml:3:23: policy typo: validation validation-1: undefined field 'comand'
}
