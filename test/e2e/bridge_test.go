package e2e

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// loop claude-hook as Claude Code runs it: one process per event, several
// at once on one session. Every event is recorded once, in one run with
// ordered seqs, and observer replay --session shows the session.
func TestClaudeHookProcesses(t *testing.T) {
	bin := binaries(t)
	url, b := startBus(t)
	const session = "0c6b9d52-3f1e-4b8a-a5d7-2e9f0c1b4a63"
	in := func(event, fields string) string {
		return fmt.Sprintf(`{"session_id": %q, "transcript_path": "/tmp/x.jsonl", "cwd": "/tmp", "hook_event_name": %q%s}`, session, event, fields)
	}
	hook := func(stdin string) string {
		code, stdout, stderr := run(t, bin, "loop", stdin, "claude-hook", "--nats", url)
		if code != 0 {
			t.Errorf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
		}
		return stdout
	}
	hook(in("SessionStart", `, "source": "startup"`))
	hook(in("UserPromptSubmit", `, "prompt": "clean up"`))
	// Parallel tool calls: their PreToolUse hooks run at once.
	var wg sync.WaitGroup
	outs := make([]string, 6)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := "ls"
			if i == 0 {
				cmd = "rm -rf build"
			}
			outs[i] = hook(in("PreToolUse", fmt.Sprintf(`, "tool_name": "Bash", "tool_use_id": "toolu_%d", "tool_input": {"command": %q}`, i, cmd)))
		}()
	}
	wg.Wait()
	if !strings.Contains(outs[0], `"permissionDecision":"deny"`) || !strings.Contains(outs[0], "no rm -rf in this repository") {
		t.Fatalf("rm -rf: %s", outs[0])
	}
	for _, o := range outs[1:] {
		if strings.TrimSpace(o) != "{}" {
			t.Fatalf("ls: %s", o)
		}
	}
	hook(in("Stop", `, "stop_hook_active": false, "last_assistant_message": "Cleaned."`))

	want := "run.started intake" + strings.Repeat(" hook.decided tool.before", 6) + " stop run.completed"
	if got := stages(t, b, session); got != want {
		t.Fatalf("session:\n got %s\nwant %s", got, want)
	}
	code, stdout, stderr := run(t, bin, "observer", "", "replay", "--nats", url, "--session", session)
	if code != 0 || strings.Count(stdout, "Bash{") != 6 || !strings.Contains(stdout, "run.completed") || !strings.Contains(stdout, "no rm -rf in this repository") {
		t.Fatalf("observer replay: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
}
