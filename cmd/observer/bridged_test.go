package main

import (
	"context"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/bridge"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/loop"
)

// The auditor sees the whole of a Claude Code session recorded by the
// bridge: observer replay lists every event, those no stage stands for as
// harness.event with the event's name, and observer show draws the run
// with them.
func TestBridgedSessionShown(t *testing.T) {
	srv, nc := bustest.Start(t, bustest.WithListener())
	b := bustest.Provision(t, nc)
	br, err := bridge.New(bridge.Config{Store: b})
	if err != nil {
		t.Fatal(err)
	}
	const s = "cc-audit"
	for _, in := range []string{
		`"hook_event_name": "SessionStart", "source": "startup"`,
		`"hook_event_name": "InstructionsLoaded", "file_path": "/w/CLAUDE.md", "memory_type": "Project", "load_reason": "session_start"`,
		`"hook_event_name": "UserPromptSubmit", "prompt": "tidy"`,
		`"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": {"command": "ls"}`,
		`"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": {"command": "ls"}, "tool_response": {"stdout": "a"}`,
		`"hook_event_name": "CwdChanged", "old_cwd": "/w", "new_cwd": "/w/sub"`,
		`"hook_event_name": "Stop", "stop_hook_active": false, "last_assistant_message": "done"`,
		`"hook_event_name": "SessionEnd", "reason": "other"`,
	} {
		parsed, err := claudecode.ParseInput([]byte(`{"session_id": "` + s + `", "transcript_path": "/t", "cwd": "/w", ` + in + `}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := br.Handle(context.Background(), parsed); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := observer(t, "replay", "--nats", srv.ClientURL(), "--agent", bridge.DefaultAgent, "--session", s)
	if code != 0 {
		t.Fatalf("replay: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"run.started", "claude InstructionsLoaded", "intake", "tool.before", "tool.after", "claude CwdChanged", "stop", "run.completed", "claude SessionEnd"} {
		if !strings.Contains(out, want) {
			t.Errorf("replay lacks %q:\n%s", want, out)
		}
	}
	evs, err := b.SessionEvents(context.Background(), bridge.DefaultAgent, s)
	if err != nil || len(evs) == 0 {
		t.Fatalf("session: %d events, %v", len(evs), err)
	}
	code, out, errOut = observer(t, "show", "--nats", srv.ClientURL(), evs[0].RunID)
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"InstructionsLoaded", "Bash", "CwdChanged", "done"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
}

// An approval the engine asked for is not taken for a coding agent's:
// the observer knows the engine's source without importing the engine.
func TestEngineSourceIsTheLoops(t *testing.T) {
	if engineSource != loop.DefaultSource {
		t.Fatalf("engineSource %q, the engine's source is %q", engineSource, loop.DefaultSource)
	}
}
