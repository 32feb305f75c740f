package interceptors_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

func ExampleChain() {
	chain := interceptors.NewChain()

	// A guard that denies destructive shell commands.
	chain.Register(interceptors.Registration{Plugin: "guard", Stage: events.StageToolBefore, Tools: "bash"},
		interceptors.Func(func(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			p, err := events.Data[events.ToolBefore](req.Event)
			if err != nil {
				return nil, err
			}
			if strings.Contains(string(p.Call.Arguments), "rm -rf") {
				return &interceptors.Decision{Kind: interceptors.Deny, Reason: "destructive command"}, nil
			}
			return nil, nil // allow
		}))

	// A redactor that rewrites every tool result; an auditor sees its patch.
	chain.Register(interceptors.Registration{Plugin: "redact", Stage: events.StageToolAfter},
		interceptors.Func(func(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			p, err := events.Data[events.ToolAfter](req.Event)
			if err != nil {
				return nil, err
			}
			p.Result.Content = strings.ReplaceAll(p.Result.Content, "hunter2", "[REDACTED]")
			return interceptors.Replace(p)
		}))

	meta := events.Meta{Source: "example", AgentID: "ops", SessionID: "s1", RunID: "r1", Subject: "bash"}
	call := events.ToolCall{ID: "c1", Name: "bash", Arguments: []byte(`{"cmd":"rm -rf /"}`)}

	before, _ := events.New(events.StageToolBefore, meta, events.ToolBefore{Call: call})
	if chain.Has(before.Stage, before.Subject, before.AgentID) {
		out, _ := chain.Run(context.Background(), before)
		fmt.Println(out.Decision, "by", out.Plugin+":", out.Reason)
	}

	after, _ := events.New(events.StageToolAfter, meta, events.ToolAfter{Call: call, Result: events.ToolResult{CallID: "c1", Content: "password=hunter2"}})
	out, _ := chain.Run(context.Background(), after)
	st, audit := out.Records[0].Audit()
	fmt.Println(out.Decision, st, string(audit.(events.HookDecided).Patch))

	fmt.Println(chain.Has(events.StageIntake, "", "ops"))
	// Output:
	// deny by guard: destructive command
	// modify hook.decided [{"op":"replace","path":"/result/content","value":"password=[REDACTED]"}]
	// false
}
