package command_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/hooks/command"
	"github.com/hookbus/hookbus/interceptors"
)

func needJQ(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("jq is not installed: the scripts of this test are the jq scripts people write for Claude Code")
	}
}

// register loads settings (JSON text) and registers them on chain with
// command hooks running in root.
func register(t *testing.T, chain *interceptors.Chain, root, settings string, cfg command.Config) *claudecode.Hooks {
	t.Helper()
	s, err := claudecode.ParseSettings([]byte(settings), filepath.Join(root, ".claude", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Root = root
	hooks, err := claudecode.Register(chain, []*claudecode.Settings{s}, claudecode.Options{
		Factories: map[string]claudecode.Factory{claudecode.TypeCommand: command.Factory(cfg)},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hooks.Unregister)
	return hooks
}

// Two hooks of one event that both rewrite the tool input run in the
// file's order, each on the input as the previous one left it: the result
// is the same every time (in Claude Code, which runs them in parallel, the
// last to finish wins), and the audit has both patches.
func TestTwoRewritesCompose(t *testing.T) {
	needJQ(t)
	root := t.TempDir()
	chain := interceptors.NewChain()
	hooks := register(t, chain, root, `{"hooks": {"PreToolUse": [
	  {"matcher": "Bash", "hooks": [
	    {"type": "command", "command": "jq -c '{hookSpecificOutput: {hookEventName: \"PreToolUse\", updatedInput: (.tool_input + {command: (.tool_input.command + \" --dry-run\")})}}'"}
	  ]},
	  {"matcher": "Bash|Write", "hooks": [
	    {"type": "command", "command": "sleep 0.05; jq -c '{hookSpecificOutput: {hookEventName: \"PreToolUse\", permissionDecision: \"allow\", updatedInput: (.tool_input + {command: (\"nice \" + .tool_input.command)})}}'", "timeout": 700}
	  ]}
	]}}`, command.Config{})
	regs := hooks.Registrations()
	if len(regs) != 2 || regs[0].Plugin != "claude-PreToolUse-0-0" || regs[1].Plugin != "claude-PreToolUse-1-0" ||
		regs[0].Order != 0 || regs[1].Order != 1 || regs[1].Timeout != 700*time.Second || !regs[1].Uncapped || regs[0].Tools != "Bash" || regs[1].Tools != "Bash|Write" {
		t.Fatalf("registrations %+v", regs)
	}
	for range 3 {
		out, err := chain.Run(context.Background(), toolBefore(t, "Bash", `{"command":"make clean"}`))
		if err != nil {
			t.Fatal(err)
		}
		if out.Decision != interceptors.Modify {
			t.Fatalf("decision %s (%s)", out.Decision, out.Reason)
		}
		var p events.ToolBefore
		if err := json.Unmarshal(out.Data, &p); err != nil {
			t.Fatal(err)
		}
		if string(p.Call.Arguments) != `{"command":"nice make clean --dry-run"}` {
			t.Fatalf("arguments %s, want the second rewrite applied on the first", p.Call.Arguments)
		}
		if len(out.Records) != 2 {
			t.Fatalf("records %+v", out.Records)
		}
		for i, want := range []string{`"make clean --dry-run"`, `"nice make clean --dry-run"`} {
			d := out.Records[i].HookDecided()
			if d.Decision != "modify" || !strings.Contains(string(d.Patch), `"path":"/call/arguments/command"`) || !strings.Contains(string(d.Patch), want) {
				t.Fatalf("record %d: hook.decided %+v (patch %s), want the patch to %s", i, d, d.Patch, want)
			}
		}
	}
	// The matcher narrows without a call: Read matches neither.
	if chain.Has(events.StageToolBefore, "Read", "coder") || !chain.Has(events.StageToolBefore, "Write", "coder") {
		t.Fatal("matchers not applied to the registrations")
	}
}

// Hooks of observe-only events run after their event is appended, when the
// Emitter is wrapped; what they answer changes nothing.
func TestObservers(t *testing.T) {
	root := t.TempDir()
	chain := interceptors.NewChain()
	log := filepath.Join(root, "observed")
	hooks := register(t, chain, root, `{"hooks": {
	  "PostToolUseFailure": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "cat >> `+log+`; echo >> `+log+`; exit 2"}]}],
	  "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "cat >> `+log+`; echo >> `+log+`"}]}]
	}}`, command.Config{})
	if len(hooks.Registrations()) != 0 || hooks.Len() != 2 {
		t.Fatalf("observers registered on the chain: %+v", hooks.Registrations())
	}
	em := hooks.Emitter(&nopEmitter{})
	ctx := context.Background()
	for _, ev := range []*events.Event{
		newEvent(t, events.StageToolFailed, "Bash", events.ToolFailed{Call: events.ToolCall{ID: "c1", Name: "Bash"}, Error: "exit status 1"}),
		newEvent(t, events.StageToolFailed, "Read", events.ToolFailed{Call: events.ToolCall{ID: "c2", Name: "Read"}, Error: "no such file"}),
		newEvent(t, events.StageRunStarted, "", events.RunStarted{Prompt: "go"}),
		newEvent(t, events.StageRunStarted, "", events.RunStarted{Prompt: "again", HistoryMessages: 3}),
	} {
		if ev.Stage == events.StageRunStarted {
			if _, err := em.Claim(ctx, ev, 0); err != nil {
				t.Fatal(err)
			}
		} else if err := em.Append(ctx, ev, 0); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"hook_event_name":"PostToolUseFailure"`) || !strings.Contains(lines[0], `"error":"exit status 1"`) ||
		!strings.Contains(lines[1], `"hook_event_name":"SessionStart"`) || !strings.Contains(lines[1], `"source":"startup"`) {
		t.Fatalf("observed:\n%s", b)
	}
}

func newEvent(t *testing.T, st events.Stage, subject string, p any) *events.Event {
	t.Helper()
	ev, err := events.New(st, events.Meta{Source: "t", AgentID: "coder", SessionID: "s1", RunID: "r1", Subject: subject}, p)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

type nopEmitter struct{}

func (nopEmitter) Append(context.Context, *events.Event, uint64) error     { return nil }
func (nopEmitter) AppendSync(context.Context, *events.Event, uint64) error { return nil }
func (nopEmitter) Claim(context.Context, *events.Event, uint64) (uint64, error) {
	return 1, nil
}
func (nopEmitter) Reclaim(context.Context, *events.Event, uint64, uint64) (uint64, error) {
	return 1, nil
}
func (nopEmitter) AppendAfter(context.Context, *events.Event, uint64) (uint64, error) {
	return 1, nil
}
func (nopEmitter) Flush(context.Context, string) error { return nil }
