package loop_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/loop/scripted"
)

// The loop normalizes its own tool calls (and MCP tools') as it puts them
// on the bus: a registration on the shell kind denies rm -rf in hookbus'
// Bash, sees no other kind, and every recorded call carries its action,
// the one a hook's rewrite leaves included.
func TestLoopCallsCarryTheirAction(t *testing.T) {
	b := looptest.New()
	chain := interceptors.NewChain()
	var shellCalls []string
	register(t, chain, interceptors.Registration{Plugin: "no-rm-rf", Stage: events.StageToolBefore, Kinds: "shell"},
		func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			tb, err := events.Data[events.ToolBefore](req.Event)
			if err != nil {
				return nil, err
			}
			shellCalls = append(shellCalls, tb.Call.Action.Command)
			switch {
			case strings.Contains(tb.Call.Action.Command, "rm -rf"):
				return &interceptors.Decision{Kind: interceptors.Deny, Reason: "no rm -rf here"}, nil
			case tb.Call.Action.Command == "ls":
				return &interceptors.Decision{Kind: interceptors.Modify, Patch: []interceptors.PatchOp{{Op: "replace", Path: "/call/arguments/command", Value: []byte(`"ls -la"`)}}}, nil
			}
			return nil, nil
		})
	script, err := scripted.Parse([]byte(`[
		{"tool_calls": [
			{"name": "Bash", "arguments": {"command": "rm -rf victim"}},
			{"name": "Bash", "arguments": {"command": "ls"}},
			{"name": "Write", "arguments": {"file_path": "notes.txt", "content": "x"}},
			{"name": "mcp__github__search_repositories", "arguments": {"query": "hookbus"}},
			{"name": "clock", "arguments": {}}]},
		{"content": "{{tool:Bash}}"}]`))
	if err != nil {
		t.Fatal(err)
	}
	bash := &countingTool{name: "Bash", answer: "ok"}
	write := &countingTool{name: "Write", answer: "written"}
	mcp := &countingTool{name: "mcp__github__search_repositories", answer: "[]"}
	clock := &countingTool{name: "clock", answer: "noon"}
	eng := newEngine(t, b, loop.Config{Hooks: chain, Model: scripted.New(script), Tools: []loop.Tool{bash, write, mcp, clock}})
	res, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "go"})
	if err != nil || res.Reason != events.ReasonDone {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if strings.Join(shellCalls, "|") != "rm -rf victim|ls" || bash.calls.Load() != 1 {
		t.Fatalf("shell interceptor saw %q; Bash ran %d times", shellCalls, bash.calls.Load())
	}
	want := map[string]events.Action{
		"rm -rf victim":                    {Kind: events.KindShell, Command: "rm -rf victim"},
		"ls -la":                           {Kind: events.KindShell, Command: "ls -la"}, // as the hook rewrote it
		"Write":                            {Kind: events.KindFileWrite, Paths: []string{"notes.txt"}},
		"mcp__github__search_repositories": {Kind: events.KindMCP, Server: "github", MCPTool: "search_repositories"},
		"clock":                            {Kind: events.KindOther},
	}
	evs := allEvents(t, b)
	for _, st := range []events.Stage{events.StageToolBefore, events.StageToolAfter} {
		var calls []events.ToolCall
		if st == events.StageToolBefore {
			for _, p := range payloadsOf[events.ToolBefore](t, evs, st) {
				calls = append(calls, p.Call)
			}
		} else {
			for _, p := range payloadsOf[events.ToolAfter](t, evs, st) {
				calls = append(calls, p.Call)
			}
		}
		if len(calls) != len(want) {
			t.Fatalf("%d %s events, want %d", len(calls), st, len(want))
		}
		for _, c := range calls {
			key := c.Name
			if c.Action != nil && c.Action.Kind == events.KindShell {
				key = c.Action.Command
			}
			w, ok := want[key]
			if !ok || c.Action == nil || c.Action.Kind != w.Kind || c.Action.Command != w.Command || strings.Join(c.Action.Paths, ",") != strings.Join(w.Paths, ",") ||
				c.Action.Server != w.Server || c.Action.MCPTool != w.MCPTool {
				t.Errorf("%s %s: action %+v, want %+v", st, c.Name, c.Action, w)
			}
		}
	}
}
