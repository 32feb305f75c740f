package copilot_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/copilot"
	"github.com/hookbus/hookbus/hooks/harness"
	"github.com/hookbus/hookbus/interceptors"
)

// Copilot CLI's PascalCase events, as 1.0.102 sends them, are recorded on
// Claude Code's stages; its camelCase events, and PermissionRequest, which
// send its own input, are harness.events of the same session, answered
// with nothing; PostToolUse's tool_result is the call's result.
func TestReferenceExamples(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "reference", "*.json"))
	if len(files) == 0 {
		t.Fatal("no examples")
	}
	session := ""
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in, err := copilot.Harness().Parse(raw)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if name := strings.TrimSuffix(filepath.Base(f), ".json"); in.Event() != name && in.Event() != "permissionRequest" {
			t.Errorf("%s: event %q", f, in.Event())
		}
		if session == "" {
			session = in.Session()
		}
		if in.Session() != session {
			t.Errorf("%s: session %q, want %q", f, in.Session(), session)
		}
		m, err := in.Map()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		want := copilot.StageOf(in.Event())
		if (m == nil) != (want == "") || m != nil && m.Stage != want {
			t.Errorf("%s: %s mapped to %+v, want %q", f, in.Event(), m, want)
			continue
		}
		if m == nil {
			if r := in.Outage(interceptors.PolicyFail, os.ErrDeadlineExceeded); len(r.Stdout) != 0 || r.Exit != 0 {
				t.Errorf("%s: a harness.event's outage answer %+v", f, r)
			}
			continue
		}
		if _, err := events.New(m.Stage, events.Meta{Source: "t", AgentID: "a", SessionID: in.Session(), RunID: "r", Subject: m.Subject}, m.Payload); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		switch p := m.Payload.(type) {
		case events.ToolBefore:
			if p.Call.Kind() != events.KindShell {
				t.Errorf("%s: kind %q", f, p.Call.Kind())
			}
			// A deny is JSON with exit status 0: Copilot CLI drops the
			// reason of an exit status 2.
			r, err := in.Answer(&harness.Outcome{Chain: &interceptors.ChainResult{Stage: m.Stage, Decision: interceptors.Deny, Reason: "no rm -rf"}})
			if err != nil || r.Exit != 0 || !strings.Contains(string(r.Stdout), `"permissionDecision":"deny"`) || !strings.Contains(string(r.Stdout), "no rm -rf") {
				t.Errorf("deny: %+v %v", r, err)
			}
		case events.ToolAfter:
			if !strings.Contains(p.Result.Content, "completed with exit code 0") {
				t.Errorf("%s: result %+v", f, p.Result)
			}
		}
	}
}
