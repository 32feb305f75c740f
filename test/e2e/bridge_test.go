package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hookbus/hookbus/events"
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

	// Each event once, in one run with seqs 1..N. The hooks of parallel
	// calls append at once, so one call's decision may be stored between
	// another call's decision and its tool.before: each decision names its
	// event (event_id) and comes before it.
	evs, err := b.SessionEvents(context.Background(), "claude-code", session)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	decidedAt := map[string]int{} // event id -> position of its decision
	for i, e := range evs {
		got = append(got, string(e.Stage))
		if e.RunID != evs[0].RunID || e.Seq != uint64(i+1) {
			t.Errorf("event %d (%s): run %s seq %d, want run %s seq %d", i, e.Stage, e.RunID, e.Seq, evs[0].RunID, i+1)
		}
		switch e.Stage {
		case events.StageHookDecided:
			d, err := events.Data[events.HookDecided](e)
			if err != nil {
				t.Fatal(err)
			}
			if _, dup := decidedAt[d.EventID]; dup {
				t.Errorf("two decisions on event %s", d.EventID)
			}
			decidedAt[d.EventID] = i
		case events.StageToolBefore:
			if _, ok := decidedAt[e.ID]; !ok {
				t.Errorf("tool.before %s (seq %d) has no decision before it", e.ID, e.Seq)
			}
			delete(decidedAt, e.ID)
		}
	}
	if len(decidedAt) > 0 {
		t.Errorf("decisions on events not stored after them: %v", decidedAt)
	}
	sorted := slices.Clone(got)
	slices.Sort(sorted)
	want := strings.Fields("hook.decided hook.decided hook.decided hook.decided hook.decided hook.decided intake run.completed run.started stop tool.before tool.before tool.before tool.before tool.before tool.before")
	if !slices.Equal(sorted, want) || len(got) < 2 || got[0] != "run.started" || got[1] != "intake" || got[len(got)-2] != "stop" || got[len(got)-1] != "run.completed" {
		t.Fatalf("session: %s", strings.Join(got, " "))
	}
	code, stdout, stderr := run(t, bin, "observer", "", "replay", "--nats", url, "--session", session)
	if code != 0 || strings.Count(stdout, "Bash{") != 6 || !strings.Contains(stdout, "run.completed") || !strings.Contains(stdout, "no rm -rf in this repository") {
		t.Fatalf("observer replay: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
}
