package claudecode_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/hooks/harness"
	"github.com/hookbus/hookbus/interceptors"
)

// reference reads the hook input examples of Claude Code's hooks reference
// (testdata/reference), by file name.
func reference(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "reference", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = b
	}
	return out
}

// Every example of Claude Code's hooks reference maps to its stage (or a
// harness.event) and is answered as Claude Code reads it: JSON on events
// with a stage, nothing at all on the others (WorktreeCreate reads a
// command hook's stdout as a path).
func TestReferenceExamples(t *testing.T) {
	seen := map[claudecode.HookEvent]bool{}
	for name, raw := range reference(t) {
		in, err := claudecode.Harness{}.Parse(raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ev := claudecode.HookEvent(in.Event())
		seen[ev] = true
		if !ev.Known() {
			t.Errorf("%s: %s is not a known event", name, ev)
		}
		m, err := in.Map()
		if err != nil {
			t.Fatalf("%s: map: %v", name, err)
		}
		want := ev.Stage()
		switch {
		case want == "" && m != nil:
			t.Errorf("%s: mapped to %s, want a harness.event", name, m.Stage)
		case want != "" && (m == nil || m.Stage != want):
			t.Errorf("%s: mapped to %v, want %s", name, m, want)
		}
		if m != nil {
			if _, err := events.New(m.Stage, events.Meta{Source: "t", AgentID: "a", SessionID: in.Session(), RunID: "r"}, m.Payload); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		r, err := in.Answer(&harness.Outcome{})
		if err != nil {
			t.Fatalf("%s: answer: %v", name, err)
		}
		out := in.Outage(interceptors.PolicyFail, errors.New("down"))
		if want == "" {
			if len(r.Stdout) != 0 || len(out.Stdout) != 0 {
				t.Errorf("%s: answered %q and %q, want nothing", name, r.Stdout, out.Stdout)
			}
			continue
		}
		for _, b := range [][]byte{r.Stdout, out.Stdout} {
			if _, err := claudecode.ParseOutput(b); err != nil || !strings.HasPrefix(string(b), "{") {
				t.Errorf("%s: answer %s: %v", name, b, err)
			}
		}
	}
	if len(seen) != 33 {
		t.Errorf("%d events in the examples, want the reference's 33", len(seen))
	}
}

// Claude Code's default hook timeouts, per event.
func TestLimits(t *testing.T) {
	for ev, want := range map[claudecode.HookEvent]time.Duration{
		claudecode.SessionEnd:       1500 * time.Millisecond,
		claudecode.MessageDisplay:   10 * time.Second,
		claudecode.UserPromptSubmit: 30 * time.Second,
		claudecode.PreModelSwitch:   30 * time.Second,
		claudecode.PostModelSwitch:  30 * time.Second,
		claudecode.PreToolUse:       600 * time.Second,
		claudecode.WorktreeCreate:   600 * time.Second,
	} {
		if got := ev.Limit(); got != want {
			t.Errorf("%s: %s, want %s", ev, got, want)
		}
	}
	if len(claudecode.AllEvents()) != 34 {
		t.Errorf("%d events, want 34 (the reference's 33 and PreSkillShellCommand)", len(claudecode.AllEvents()))
	}
}

// A PermissionRequest is answered by its approval: allow (with the edited
// arguments as updatedInput), deny with who refused and why, deny when a
// tool.before interceptor denied the call, and nothing until either.
func TestPermissionAnswers(t *testing.T) {
	in, err := claudecode.ParseInput([]byte(`{"session_id":"s","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"ls"}}`))
	if err != nil {
		t.Fatal(err)
	}
	answer := func(out *harness.Outcome) string {
		t.Helper()
		o, err := claudecode.AnswerOutcome(in, out, claudecode.AnswerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return string(o.JSON())
	}
	for _, tc := range []struct {
		out  *harness.Outcome
		want string
	}{
		{&harness.Outcome{}, `{}`},
		{&harness.Outcome{Approval: &events.ApprovalResolved{Approved: true, Action: events.ActionApprove}},
			`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}`},
		{&harness.Outcome{Approval: &events.ApprovalResolved{Approved: true, Action: events.ActionApprove, Arguments: json.RawMessage(`{"command":"ls -la"}`)}},
			`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow","updatedInput":{"command":"ls -la"}}}}`},
		{&harness.Outcome{Approval: &events.ApprovalResolved{Action: events.ActionReject, By: "alice", Actor: events.Actor{Identity: "alice", Channel: events.ChannelCLI}, Reason: "not now"}},
			`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"rejected by alice (cli): not now"}}}`},
		{&harness.Outcome{Chain: &interceptors.ChainResult{Stage: events.StageToolBefore, Decision: interceptors.Deny, Reason: "no"}},
			`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"no"}}}`},
		{&harness.Outcome{Warnings: []string{"nobody answered"}}, `{"systemMessage":"nobody answered"}`},
	} {
		if got := answer(tc.out); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
	out := claudecode.OutageAnswer(in, interceptors.PolicyFail, errors.New("down"))
	if d := out.HookSpecificOutput; d == nil || d.Decision == nil || d.Decision.Behavior != claudecode.PermissionDeny {
		t.Errorf("outage under fail: %s", out.JSON())
	}
}
