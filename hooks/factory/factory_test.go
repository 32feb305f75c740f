package factory_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/factory"
	"github.com/hookbus/hookbus/hooks/harness"
	"github.com/hookbus/hookbus/interceptors"
)

// Droid's inputs, as 0.225 sends them, are recorded on Claude Code's
// stages, its Execute a shell call; a deny is Claude Code's, in JSON.
func TestReferenceExamples(t *testing.T) {
	for file, want := range map[string]events.Stage{
		"SessionStart": events.StageRunStarted, "PreToolUse": events.StageToolBefore,
		"PostToolUse": events.StageToolAfter, "Stop": events.StageStop, "SessionEnd": events.StageRunCompleted,
	} {
		raw, err := os.ReadFile(filepath.Join("testdata", "reference", file+".json"))
		if err != nil {
			t.Fatal(err)
		}
		in, err := factory.Harness().Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		m, err := in.Map()
		if err != nil || m == nil || m.Stage != want {
			t.Fatalf("%s: %+v %v, want %s", file, m, err, want)
		}
		if _, err := events.New(m.Stage, events.Meta{Source: "t", AgentID: "a", SessionID: in.Session(), RunID: "r", Subject: m.Subject}, m.Payload); err != nil {
			t.Errorf("%s: %v", file, err)
		}
		switch p := m.Payload.(type) {
		case events.ToolBefore:
			if p.Call.Kind() != events.KindShell || p.Call.Action.Command != "rm -rf victim" {
				t.Errorf("%s: %+v", file, p.Call.Action)
			}
			out, err := in.Answer(&harness.Outcome{Chain: &interceptors.ChainResult{Stage: m.Stage, Decision: interceptors.Deny, Reason: "no rm -rf"}})
			var o struct {
				HookSpecificOutput struct {
					PermissionDecision       string `json:"permissionDecision"`
					PermissionDecisionReason string `json:"permissionDecisionReason"`
				} `json:"hookSpecificOutput"`
			}
			if err != nil || out.Exit != 0 || json.Unmarshal(out.Stdout, &o) != nil || o.HookSpecificOutput.PermissionDecision != "deny" || o.HookSpecificOutput.PermissionDecisionReason != "no rm -rf" {
				t.Errorf("deny: %+v %v", out, err)
			}
		case events.ToolAfter:
			if !strings.Contains(p.Result.Content, "exited with code 0") {
				t.Errorf("%s: result %+v", file, p.Result)
			}
		case events.RunCompleted:
			if !strings.Contains(p.Detail, "Factory Droid") {
				t.Errorf("%s: %+v", file, p)
			}
		}
	}
}
