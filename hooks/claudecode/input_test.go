package claudecode_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
)

// Each mapped event's input carries the fields Claude Code's hooks
// reference lists for it, built from the stage's event.
func TestNewInput(t *testing.T) {
	env := claudecode.Env{Cwd: "/work/root", TranscriptPath: "/tmp/t/s1.jsonl", AgentTranscriptPath: "/tmp/t/child.jsonl", Model: "anthropic:claude-sonnet-4-5"}
	common := map[string]any{"session_id": "s1", "transcript_path": "/tmp/t/s1.jsonl", "cwd": "/work/root", "permission_mode": "default"}
	call := events.ToolCall{ID: "toolu_1", Name: "Bash", Arguments: json.RawMessage(`{"command":"ls -la"}`)}
	for _, tc := range []struct {
		event   claudecode.HookEvent
		stage   events.Stage
		subject string
		payload any
		want    map[string]any
	}{
		{claudecode.UserPromptSubmit, events.StageIntake, "", events.Intake{Prompt: "fix the bug"},
			map[string]any{"prompt": "fix the bug"}},
		{claudecode.SessionStart, events.StageRunStarted, "", events.RunStarted{Prompt: "p"},
			map[string]any{"source": "startup", "model": "anthropic:claude-sonnet-4-5"}},
		{claudecode.SessionStart, events.StageRunStarted, "", events.RunStarted{Prompt: "p", HistoryMessages: 4},
			map[string]any{"source": "resume", "model": "anthropic:claude-sonnet-4-5"}},
		{claudecode.PreToolUse, events.StageToolBefore, "Bash", events.ToolBefore{Call: call},
			map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": "ls -la"}, "tool_use_id": "toolu_1"}},
		{claudecode.PostToolUse, events.StageToolAfter, "Bash", events.ToolAfter{Call: call, Result: events.ToolResult{CallID: "toolu_1", Name: "Bash", Content: "a\nb"}},
			map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": "ls -la"}, "tool_use_id": "toolu_1",
				"tool_response": map[string]any{"stdout": "a\nb", "stderr": "", "interrupted": false, "isImage": false}}},
		{claudecode.PostToolUseFailure, events.StageToolFailed, "Bash", events.ToolFailed{Call: call, Error: "exit status 1"},
			map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": "ls -la"}, "tool_use_id": "toolu_1", "error": "exit status 1", "is_interrupt": false}},
		{claudecode.PermissionRequest, events.StageApprovalRequested, "Bash", events.ApprovalRequested{Call: call, Reason: "deploys"},
			map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": "ls -la"}}},
		{claudecode.Notification, events.StageApprovalRequested, "Bash", events.ApprovalRequested{Call: call, Reason: "deploys"},
			map[string]any{"message": "coder needs your permission to use Bash: deploys", "title": "Permission needed", "notification_type": "permission_prompt"}},
		{claudecode.SubagentStart, events.StageSubagentBefore, "reviewer", events.SubagentBefore{AgentID: "reviewer", Instruction: "review", RunID: "child-run"},
			map[string]any{"agent_id": "child-run", "agent_type": "reviewer"}},
		{claudecode.SubagentStop, events.StageSubagentAfter, "reviewer", events.SubagentAfter{AgentID: "reviewer", RunID: "child-run", Answer: "LGTM", Success: true},
			map[string]any{"agent_id": "child-run", "agent_type": "reviewer", "stop_hook_active": false, "last_assistant_message": "LGTM", "agent_transcript_path": "/tmp/t/child.jsonl"}},
		{claudecode.SubagentStop, events.StageSubagentFailed, "reviewer", events.SubagentFailed{AgentID: "reviewer", RunID: "child-run", Error: "boom"},
			map[string]any{"agent_id": "child-run", "agent_type": "reviewer", "stop_hook_active": false, "last_assistant_message": "", "agent_transcript_path": "/tmp/t/child.jsonl"}},
		{claudecode.PreCompact, events.StageCompactBefore, "", events.CompactBefore{Messages: 40, Manual: true},
			map[string]any{"trigger": "manual", "custom_instructions": ""}},
		{claudecode.PreCompact, events.StageCompactBefore, "", events.CompactBefore{Messages: 40},
			map[string]any{"trigger": "auto", "custom_instructions": ""}},
		{claudecode.PostCompact, events.StageCompactAfter, "", events.CompactAfter{Summary: "we fixed it"},
			map[string]any{"trigger": "auto", "compact_summary": "we fixed it"}},
		{claudecode.Stop, events.StageStop, "", events.Stop{Reason: "done", Answer: "fixed"},
			map[string]any{"stop_hook_active": false, "last_assistant_message": "fixed"}},
		{claudecode.Stop, events.StageStop, "", events.Stop{Reason: "done", Answer: "fixed", Continues: 1},
			map[string]any{"stop_hook_active": true, "last_assistant_message": "fixed"}},
		{claudecode.SessionEnd, events.StageRunCompleted, "", events.RunCompleted{Reason: "done"},
			map[string]any{"reason": "other"}},
		{claudecode.SessionEnd, events.StageRunFailed, "", events.RunFailed{Error: "x"},
			map[string]any{"reason": "other"}},
	} {
		t.Run(string(tc.event)+"/"+string(tc.stage), func(t *testing.T) {
			in, err := claudecode.NewInput(tc.event, event(t, tc.stage, tc.subject, tc.payload), env)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"hook_event_name": string(tc.event)}
			for k, v := range common {
				want[k] = v
			}
			for k, v := range tc.want {
				want[k] = v
			}
			if got := fields(t, in); !reflect.DeepEqual(got, want) {
				t.Fatalf("input\n got %v\nwant %v", got, want)
			}
		})
	}
}

func TestNewInputUnmapped(t *testing.T) {
	_, err := claudecode.NewInput(claudecode.PreToolUse, event(t, events.StageIntake, "", events.Intake{Prompt: "x"}), claudecode.Env{})
	if !errors.Is(err, claudecode.ErrUnmapped) {
		t.Fatalf("PreToolUse from intake: %v", err)
	}
	_, err = claudecode.NewInput(claudecode.PreToolUse, &events.Event{Stage: events.StageToolBefore, Data: json.RawMessage(`{"call":7}`), ID: "x"}, claudecode.Env{})
	if !errors.Is(err, events.ErrPayload) {
		t.Fatalf("bad payload: %v", err)
	}
}

// A tool event of a sub-agent's run names the sub-agent, as Claude Code's
// tool events inside a sub-agent do.
func TestNewInputInSubagent(t *testing.T) {
	ev, err := events.New(events.StageToolBefore, events.Meta{Source: "t", AgentID: "reviewer", SessionID: "cs", RunID: "child-run",
		ParentAgentID: "coder", ParentSessionID: "s1", ParentRunID: "r1", Subject: "Read"},
		events.ToolBefore{Call: events.ToolCall{ID: "c", Name: "Read"}})
	if err != nil {
		t.Fatal(err)
	}
	in, err := claudecode.NewInput(claudecode.PreToolUse, ev, claudecode.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if in.AgentID != "child-run" || in.AgentType != "reviewer" || string(in.ToolInput) != "{}" {
		t.Fatalf("input %+v", in)
	}
}

func TestEventTable(t *testing.T) {
	for _, e := range claudecode.Events() {
		if len(e.Stages()) == 0 {
			t.Errorf("%s fires on no stage", e)
		}
		if st := e.Stage(); st != "" && !st.Valid() {
			t.Errorf("%s: stage %q", e, st)
		}
		for _, st := range e.Stages() {
			found := false
			for _, o := range claudecode.EventsFor(st) {
				found = found || o == e
			}
			if !found {
				t.Errorf("EventsFor(%s) misses %s", st, e)
			}
		}
	}
	intercepting := map[claudecode.HookEvent]bool{claudecode.UserPromptSubmit: true, claudecode.PreToolUse: true,
		claudecode.PostToolUse: true, claudecode.SubagentStart: true, claudecode.Stop: true}
	for _, e := range claudecode.Events() {
		if e.Intercepts() != intercepting[e] {
			t.Errorf("%s.Intercepts() = %v", e, e.Intercepts())
		}
	}
	if claudecode.Notification.Stage() != "" || claudecode.HookEvent("PermissionDenied").Mapped() {
		t.Error("Notification is recorded as a stage, or PermissionDenied is mapped")
	}
}
