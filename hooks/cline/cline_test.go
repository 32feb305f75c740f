package cline_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/cline"
	"github.com/hookbus/hookbus/hooks/harness"
	"github.com/hookbus/hookbus/interceptors"
)

func example(t *testing.T, name string) harness.Input {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "reference", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	in, err := cline.Harness{}.Parse(raw)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return in
}

// Cline's inputs, as cline 3.0.65 sends them, are named by the object they
// carry, recorded in the task's session on their stages, with the call's
// tool normalized.
func TestReferenceExamples(t *testing.T) {
	for _, tc := range []struct {
		file, event string
		stage       events.Stage
	}{
		{"TaskStart", cline.TaskStart, events.StageRunStarted},
		{"PreToolUse", cline.PreToolUse, events.StageToolBefore},
		{"PostToolUse", cline.PostToolUse, events.StageToolAfter},
		{"TaskComplete", cline.TaskComplete, events.StageStop},
	} {
		in := example(t, tc.file)
		if in.Event() != tc.event || !strings.HasPrefix(in.Session(), "conv_") {
			t.Errorf("%s: event %q session %q", tc.file, in.Event(), in.Session())
		}
		m, err := in.Map()
		if err != nil || m == nil || m.Stage != tc.stage {
			t.Fatalf("%s: mapped to %+v (%v), want %s", tc.file, m, err, tc.stage)
		}
		if _, err := events.New(m.Stage, events.Meta{Source: "t", AgentID: "a", SessionID: in.Session(), RunID: "r", Subject: m.Subject}, m.Payload); err != nil {
			t.Errorf("%s: %v", tc.file, err)
		}
		if m.Stage == events.StageToolBefore && (m.Kind() != events.KindShell || m.Payload.(events.ToolBefore).Call.Action.Command != "rm -rf victim") {
			t.Errorf("%s: the call's action is %+v", tc.file, m.Payload.(events.ToolBefore).Call.Action)
		}
	}
	if stop := mustMap(t, example(t, "TaskComplete")).Payload.(events.Stop); stop.Answer != "Done, I left victim alone." {
		t.Errorf("TaskComplete's answer: %+v", stop)
	}
}

func mustMap(t *testing.T, in harness.Input) *harness.Mapped {
	t.Helper()
	m, err := in.Map()
	if err != nil || m == nil {
		t.Fatalf("%s: %+v %v", in.Event(), m, err)
	}
	return m
}

// A denied shell call goes on as a command that prints the reason and
// fails, the reason as context: the run goes on and the model learns why.
// Cline's cancel, which ends the run and tells the model nothing, answers
// only what cannot be denied so.
func TestDenyReplacesTheCommand(t *testing.T) {
	in := example(t, "PreToolUse")
	reason := "no rm -rf in this repository; it's the rule"
	out, err := in.Answer(&harness.Outcome{Chain: &interceptors.ChainResult{Stage: events.StageToolBefore, Decision: interceptors.Deny, Reason: reason}})
	if err != nil {
		t.Fatal(err)
	}
	var o cline.Output
	if err := json.Unmarshal(out.Stdout, &o); err != nil {
		t.Fatalf("%v: %s", err, out.Stdout)
	}
	var input struct {
		Commands []string `json:"commands"`
	}
	if o.Cancel || json.Unmarshal(o.OverrideInput, &input) != nil || len(input.Commands) != 1 || !strings.Contains(o.Context, reason) {
		t.Fatalf("answer %s", out.Stdout)
	}
	// The replacement prints the reason, quoted as the shell reads it, and
	// fails.
	cmd := exec.Command("sh", "-c", input.Commands[0])
	got, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || strings.TrimSpace(string(got)) != "hookbus denied this call: "+reason {
		t.Fatalf("the replacement %q printed %q (%v)", input.Commands[0], got, err)
	}

	// A stop cancels the task.
	out, err = in.Answer(&harness.Outcome{Chain: &interceptors.ChainResult{Stage: events.StageToolBefore, Decision: interceptors.Stop, Reason: "enough"}})
	if err != nil || !strings.Contains(string(out.Stdout), `"cancel":true`) {
		t.Fatalf("stop: %s %v", out.Stdout, err)
	}
}

// A rewritten call runs with the interceptors' input; a call of another
// tool than a shell's, denied, cancels the task, saying why.
func TestRewriteAndOtherTools(t *testing.T) {
	in := example(t, "PreToolUse")
	data, _ := json.Marshal(events.ToolBefore{Call: events.ToolCall{Name: "run_commands", Arguments: json.RawMessage(`{"commands":["touch rewritten.txt"]}`)}})
	out, err := in.Answer(&harness.Outcome{Chain: &interceptors.ChainResult{Stage: events.StageToolBefore, Decision: interceptors.Modify, Data: data}})
	if err != nil || string(out.Stdout) != `{"overrideInput":{"commands":["touch rewritten.txt"]}}` {
		t.Fatalf("rewrite: %s %v", out.Stdout, err)
	}
	raw := []byte(`{"taskId":"conv_1","hookName":"tool_call","tool_call":{"id":"c1","name":"editor","input":{"path":"/p/a"}},"preToolUse":{"toolName":"editor","parameters":{}}}`)
	other, err := cline.Harness{}.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	out, err = other.Answer(&harness.Outcome{Chain: &interceptors.ChainResult{Stage: events.StageToolBefore, Decision: interceptors.Deny, Reason: "no edits"}})
	if err != nil || !strings.Contains(string(out.Stdout), `"cancel":true`) || !strings.Contains(string(out.Stdout), "no edits") {
		t.Fatalf("editor denied: %s %v", out.Stdout, err)
	}
	if m := mustMap(t, other); m.Kind() != events.KindFileEdit {
		t.Errorf("editor's kind %q", m.Kind())
	}
}

// When hookbus is away, policy fail denies a tool call the same way, and
// ignore lets it through with a warning on stderr only.
func TestOutage(t *testing.T) {
	in := example(t, "PreToolUse")
	cause := errors.New("nats: no servers available")
	if r := in.Outage(interceptors.PolicyFail, cause); !strings.Contains(string(r.Stdout), "overrideInput") || !strings.Contains(string(r.Stdout), "fail closed") {
		t.Fatalf("fail: %+v", r)
	}
	if r := in.Outage(interceptors.PolicyIgnore, cause); len(r.Stdout) != 0 || !strings.Contains(r.Stderr, "proceeds unchecked") {
		t.Fatalf("ignore: %+v", r)
	}
}

// An input without a task, or naming no event, is refused as bad input.
func TestBadInput(t *testing.T) {
	for _, raw := range []string{`{}`, `{"taskId":"conv_1"}`, `not json`} {
		if _, err := (cline.Harness{}).Parse([]byte(raw)); !errors.Is(err, harness.ErrBadInput) {
			t.Errorf("%s: %v, want ErrBadInput", raw, err)
		}
	}
	if _, err := (cline.Harness{}).Parse([]byte(`{"taskId":"conv_1","hookName":"agent_error"}`)); err != nil {
		t.Errorf("an unknown event by its hookName: %v", err)
	}
}
