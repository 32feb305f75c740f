package webui_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bridge"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/webui"
)

// A Claude Code session on the bus: the page lists its permission request
// (the tool call, the suggestions), the answer given on the page reaches
// Claude Code, and the run's timeline has every event of the session,
// the harness's own events included.
func TestBridgedSession(t *testing.T) {
	b := bustest.StartBus(t)
	hs := serve(t, b, true)
	br, err := bridge.New(bridge.Config{Store: b, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	hook := func(event, fields string) *claudecode.Output {
		t.Helper()
		in, err := claudecode.ParseInput([]byte(`{"session_id": "cc", "transcript_path": "/t", "cwd": "/w", "hook_event_name": "` + event + `"` + fields + `}`))
		if err != nil {
			t.Fatal(err)
		}
		out, err := br.Handle(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	hook("SessionStart", `, "source": "startup"`)
	hook("InstructionsLoaded", `, "file_path": "/w/CLAUDE.md", "memory_type": "Project", "load_reason": "session_start"`)
	hook("UserPromptSubmit", `, "prompt": "tidy"`)
	hook("PreToolUse", `, "tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": {"command": "rm -rf build"}`)
	answered := make(chan *claudecode.Output, 1)
	go func() {
		answered <- hook("PermissionRequest", `, "tool_name": "Bash", "tool_input": {"command": "rm -rf build"}, "permission_suggestions": [{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]`)
	}()
	var pending webui.ApprovalsView
	bustest.Eventually(t, 10*time.Second, func() bool {
		getJSON(t, hs.URL+"/api/approvals", 200, &pending)
		return len(pending.Approvals) == 1
	})
	a := pending.Approvals[0]
	if a.Tool != "Bash" || a.CallID != "toolu_1" || !strings.Contains(string(a.Arguments), "rm -rf build") || !strings.Contains(string(a.Suggestions), "acceptEdits") || a.AgentID != "claude-code" {
		t.Fatalf("the page's request: %+v", a)
	}
	var ans webui.AnswerResult
	if code := postJSON(t, hs.URL+"/api/runs/"+a.RunID+"/answer?agent=claude-code&session=cc", `{"action":"approve","call_id":"toolu_1"}`, &ans); code != 200 || !ans.Recorded {
		t.Fatalf("approve: %d %+v", code, ans)
	}
	if out := <-answered; out.HookSpecificOutput == nil || out.HookSpecificOutput.Decision == nil || out.HookSpecificOutput.Decision.Behavior != "allow" {
		t.Fatalf("Claude Code was answered %s", out.JSON())
	}
	hook("PostToolUse", `, "tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": {"command": "rm -rf build"}, "tool_response": {"stdout": ""}`)
	hook("Stop", `, "stop_hook_active": false, "last_assistant_message": "done"`)
	var v webui.RunView
	getJSON(t, hs.URL+"/api/runs/"+a.RunID, 200, &v)
	got := entryStages(v.Entries)
	for _, want := range []events.Stage{events.StageHarnessEvent, events.StageApprovalRequested, events.StageApprovalResolved, events.StageToolAfter, events.StageRunCompleted} {
		if !slices.Contains(got, string(want)) {
			t.Fatalf("the timeline lacks %s: %v", want, got)
		}
	}
}
