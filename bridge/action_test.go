package bridge_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/bridge"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/hooks/codex"
	"github.com/hookbus/hookbus/hooks/gemini"
	"github.com/hookbus/hookbus/hooks/harness"
	"github.com/hookbus/hookbus/interceptors"
)

// reference reads a harness's recorded hook input and changes its
// tool_input (and tool_name when name is set).
func reference(t *testing.T, path, name string, toolInput any) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if name != "" {
		m["tool_name"] = name
	}
	if toolInput != nil {
		m["tool_input"] = toolInput
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// One registration on the shell kind denies rm -rf in Claude Code, Gemini
// CLI and Codex CLI, through the bridge, from each harness's recorded hook
// input: the call is recorded with its action beside its native name, and
// a call of another kind is not sent to the interceptor.
func TestBridgeMatchesShellKindInEveryHarness(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		h       harness.Protocol
		raw     []byte
		tool    string
		kind    events.ActionKind
		command string
		denied  bool
		paths   []string
		mcp     [2]string
	}{
		{"claude Bash", claudecode.Harness{}, reference(t, "../hooks/claudecode/testdata/reference/06-PreToolUse.json", "", map[string]any{"command": "rm -rf victim"}),
			"Bash", events.KindShell, "rm -rf victim", true, nil, [2]string{}},
		{"claude Write", claudecode.Harness{}, reference(t, "../hooks/claudecode/testdata/reference/07-PreToolUse-Write.json", "", nil),
			"Write", events.KindFileWrite, "", false, []string{`C:\project\src\index.ts`}, [2]string{}},
		{"gemini run_shell_command", gemini.Harness{}, reference(t, "../hooks/gemini/testdata/reference/06-BeforeTool.json", "", map[string]any{"command": "rm -rf victim"}),
			"run_shell_command", events.KindShell, "rm -rf victim", true, nil, [2]string{}},
		{"gemini ls", gemini.Harness{}, reference(t, "../hooks/gemini/testdata/reference/06-BeforeTool.json", "", nil),
			"run_shell_command", events.KindShell, "ls -la", false, nil, [2]string{}},
		{"gemini MCP", gemini.Harness{}, reference(t, "../hooks/gemini/testdata/reference/07-BeforeTool-mcp.json", "", nil),
			"mcp_github_search_repositories", events.KindMCP, "", false, nil, [2]string{"github", "search_repositories"}},
		{"codex Bash", codex.Harness{}, reference(t, "../hooks/codex/testdata/reference/05-PreToolUse.json", "", map[string]any{"command": "rm -rf victim"}),
			"Bash", events.KindShell, "rm -rf victim", true, nil, [2]string{}},
		{"codex shell argv", codex.Harness{}, reference(t, "../hooks/codex/testdata/reference/05-PreToolUse.json", "shell", map[string]any{"command": []string{"bash", "-lc", "rm -rf victim"}}),
			"shell", events.KindShell, "bash -lc rm -rf victim", true, nil, [2]string{}},
		{"codex apply_patch", codex.Harness{}, reference(t, "../hooks/codex/testdata/reference/05-PreToolUse.json", "apply_patch", map[string]any{"input": "*** Begin Patch\n*** Update File: main.go\n@@\n-a\n+b\n*** End Patch\n"}),
			"apply_patch", events.KindFileEdit, "", false, []string{"main.go"}, [2]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var called []string
			chain := interceptors.NewChain()
			if _, err := chain.Register(interceptors.Registration{Plugin: "no-rm-rf", Stage: events.StageToolBefore, Kinds: "shell"},
				interceptors.Func(func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
					tb, err := events.Data[events.ToolBefore](req.Event)
					if err != nil {
						return nil, err
					}
					called = append(called, tb.Call.Name)
					if strings.Contains(tb.Call.Action.Command, "rm -rf") {
						return &interceptors.Decision{Kind: interceptors.Deny, Reason: "no rm -rf here"}, nil
					}
					return nil, nil
				})); err != nil {
				t.Fatal(err)
			}
			br, err := bridge.New(bridge.Config{Store: b, Hooks: chain, Harness: tc.h})
			if err != nil {
				t.Fatal(err)
			}
			in, err := tc.h.Parse(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			reply, err := br.Serve(ctx, tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			out := string(reply.Stdout) + reply.Stderr
			if got := strings.Contains(out, "no rm -rf here"); got != tc.denied {
				t.Errorf("denied %v, want %v: %s", got, tc.denied, out)
			}
			if wantCalled := tc.kind == events.KindShell; (len(called) == 1) != wantCalled {
				t.Errorf("interceptor called for %v, want called %v", called, wantCalled)
			}
			evs, err := b.SessionEvents(ctx, tc.h.Agent(), in.Session())
			if err != nil {
				t.Fatal(err)
			}
			var tb *events.ToolBefore
			for _, e := range evs {
				if e.Stage == events.StageToolBefore {
					p, err := events.Data[events.ToolBefore](e)
					if err != nil {
						t.Fatal(err)
					}
					tb = &p
				}
			}
			if tb == nil {
				t.Fatal("no tool.before recorded")
			}
			a := tb.Call.Action
			if tb.Call.Name != tc.tool || a == nil || a.Kind != tc.kind || a.Command != tc.command ||
				strings.Join(a.Paths, ",") != strings.Join(tc.paths, ",") || a.Server != tc.mcp[0] || a.MCPTool != tc.mcp[1] {
				t.Errorf("recorded call %s with action %+v, want %s %s %q %v %v", tb.Call.Name, a, tc.tool, tc.kind, tc.command, tc.paths, tc.mcp)
			}
		})
	}
}
