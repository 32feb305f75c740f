package qwen_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/harness"
	"github.com/hookbus/hookbus/hooks/qwen"
	"github.com/hookbus/hookbus/interceptors"
)

func example(t *testing.T, name string) harness.Input {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "reference", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	in, err := qwen.Harness().Parse(raw)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return in
}

// Qwen Code's inputs, as 0.24.4 sends them, are recorded on Claude Code's
// stages with Qwen Code's tools; its second, empty UserPromptSubmit of a
// tool-result turn is no new prompt: a harness.event, answered with
// nothing.
func TestReferenceExamples(t *testing.T) {
	for file, want := range map[string]events.Stage{
		"SessionStart": events.StageRunStarted, "Notification": "", "UserPromptSubmit": events.StageIntake,
		"PreToolUse": events.StageToolBefore, "PostToolUse": events.StageToolAfter, "PostToolBatch": "",
		"UserPromptSubmit-empty": "", "Stop": events.StageStop,
	} {
		in := example(t, file)
		m, err := in.Map()
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if (m == nil) != (want == "") || m != nil && m.Stage != want {
			t.Errorf("%s: mapped to %+v, want %q", file, m, want)
			continue
		}
		if m == nil {
			if r, err := in.Answer(&harness.Outcome{}); err != nil || len(r.Stdout) != 0 {
				t.Errorf("%s: a harness.event answered %+v %v", file, r, err)
			}
			continue
		}
		if _, err := events.New(m.Stage, events.Meta{Source: "t", AgentID: "a", SessionID: in.Session(), RunID: "r", Subject: m.Subject}, m.Payload); err != nil {
			t.Errorf("%s: %v", file, err)
		}
		if m.Stage == events.StageToolBefore && m.Kind() != events.KindShell {
			t.Errorf("%s: kind %q", file, m.Kind())
		}
	}
}

// Qwen Code runs the model's call whatever updatedInput says: a rewritten
// call is denied, the model told the rewritten arguments.
func TestRewriteIsDenied(t *testing.T) {
	in := example(t, "PreToolUse")
	data, _ := json.Marshal(events.ToolBefore{Call: events.ToolCall{Name: "run_shell_command", Arguments: json.RawMessage(`{"command": "touch rewritten.txt"}`)}})
	r, err := in.Answer(&harness.Outcome{Chain: &interceptors.ChainResult{Stage: events.StageToolBefore, Decision: interceptors.Modify, Data: data}})
	if err != nil {
		t.Fatal(err)
	}
	out := string(r.Stdout)
	if !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, `{\"command\":\"touch rewritten.txt\"}`) || strings.Contains(out, "updatedInput") {
		t.Fatalf("answer %s", out)
	}
}
