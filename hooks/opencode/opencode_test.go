package opencode_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/harness"
	"github.com/hookbus/hookbus/hooks/opencode"
	"github.com/hookbus/hookbus/interceptors"
)

// pre is what the plugin posts for tool.execute.before of OpenCode's bash.
const pre = `{"hook_event_name":"PreToolUse","session_id":"ses_1","transcript_path":"","cwd":"/p","tool_name":"bash","tool_use_id":"call_1","tool_input":{"command":"rm -rf victim","description":"Remove"}}`

func parse(t *testing.T, h opencode.Harness, raw string) harness.Input {
	t.Helper()
	in, err := h.Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func answer(t *testing.T, in harness.Input, out *harness.Outcome) opencode.Answer {
	t.Helper()
	r, err := in.Answer(out)
	if err != nil {
		t.Fatal(err)
	}
	var a opencode.Answer
	if len(r.Stdout) > 0 {
		if err := json.Unmarshal(r.Stdout, &a); err != nil {
			t.Fatalf("%s: %v", r.Stdout, err)
		}
	}
	return a
}

func TestHarnesses(t *testing.T) {
	for _, tc := range []struct {
		h           opencode.Harness
		name, agent string
		wantHarness events.Harness
	}{
		{opencode.OpenCode, "opencode", "opencode", events.HarnessOpenCode},
		{opencode.Kilo, "kilo", "kilo-code", events.HarnessKilo},
	} {
		if tc.h.Name() != tc.name || tc.h.Agent() != tc.agent {
			t.Errorf("%s: name %s agent %s", tc.name, tc.h.Name(), tc.h.Agent())
		}
		m, err := parse(t, tc.h, pre).Map()
		if err != nil {
			t.Fatal(err)
		}
		if m.Stage != events.StageToolBefore || m.Subject != "bash" || m.Kind() != events.KindShell {
			t.Errorf("%s: mapped to %s %s kind %q", tc.name, m.Stage, m.Subject, m.Kind())
		}
	}
	if len(opencode.Events()) != len(opencode.Hooks()) {
		t.Errorf("Events %v and Hooks %v differ in length", opencode.Events(), opencode.Hooks())
	}
}

// An input the plugin does not post is refused, named.
func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{`{`, "bad hook input"},
		{`{"session_id":"s"}`, "no hook_event_name"},
		{`{"hook_event_name":"Notification","session_id":"s"}`, `posts no "Notification" event`},
		{`{"hook_event_name":"PreToolUse","tool_name":"bash"}`, "no session_id"},
	} {
		_, err := opencode.OpenCode.Parse([]byte(tc.raw))
		if !errors.Is(err, harness.ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%s) = %v, want ErrBadInput with %q", tc.raw, err, tc.want)
		}
	}
}

// Deny and stop become block (the reason the plugin throws), a rewrite
// the new arguments, tool.after context the text added to the output.
func TestAnswer(t *testing.T) {
	in := parse(t, opencode.OpenCode, pre)
	if a := answer(t, in, &harness.Outcome{Chain: &interceptors.ChainResult{Stage: events.StageToolBefore, Decision: interceptors.Deny, Reason: "no rm -rf"}}); a.Block != "no rm -rf" {
		t.Errorf("deny: %+v", a)
	}
	if a := answer(t, in, &harness.Outcome{Chain: &interceptors.ChainResult{Stage: events.StageToolBefore, Decision: interceptors.Stop, Reason: "enough"}}); a.Block != "enough" {
		t.Errorf("stop: %+v", a)
	}
	data := json.RawMessage(`{"call":{"id":"call_1","name":"bash","arguments":{"command":"ls"}}}`)
	if a := answer(t, in, &harness.Outcome{Chain: &interceptors.ChainResult{Stage: events.StageToolBefore, Decision: interceptors.Modify, Data: data}}); a.Block != "" || !strings.Contains(string(a.Args), `"ls"`) {
		t.Errorf("modify: %+v", a)
	}
	if r, err := in.Answer(&harness.Outcome{Chain: &interceptors.ChainResult{Stage: events.StageToolBefore, Decision: interceptors.Allow}}); err != nil || len(r.Stdout) != 0 {
		t.Errorf("allow: %s %v, want an empty answer", r.Stdout, err)
	}
	prompt := parse(t, opencode.Kilo, `{"hook_event_name":"UserPromptSubmit","session_id":"ses_1","cwd":"/p","prompt":"hi"}`)
	if a := answer(t, prompt, &harness.Outcome{Chain: &interceptors.ChainResult{Stage: events.StageIntake, Decision: interceptors.Deny, Reason: "no secrets"}}); !strings.Contains(a.Block, "no secrets") {
		t.Errorf("prompt deny: %+v", a)
	}
}

// Outage: fail blocks a tool call, ignore lets it through with a warning.
func TestOutage(t *testing.T) {
	in := parse(t, opencode.OpenCode, pre)
	var a opencode.Answer
	_ = json.Unmarshal(in.Outage(interceptors.PolicyFail, errors.New("nats down")).Stdout, &a)
	if !strings.Contains(a.Block, "fail closed") {
		t.Errorf("fail: %+v", a)
	}
	a = opencode.Answer{}
	_ = json.Unmarshal(in.Outage(interceptors.PolicyIgnore, errors.New("nats down")).Stdout, &a)
	if a.Block != "" || len(a.Warnings) == 0 || !strings.Contains(a.Warnings[0], "unchecked") {
		t.Errorf("ignore: %+v", a)
	}
}
