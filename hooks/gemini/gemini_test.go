package gemini_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/gemini"
	"github.com/hookbus/hookbus/hooks/harness"
	"github.com/hookbus/hookbus/interceptors"
)

func examples(t *testing.T) map[string][]byte {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("testdata", "reference", "*.json"))
	if len(files) == 0 {
		t.Fatal("no examples")
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

// Every event of Gemini CLI maps to its stage or a harness.event and is
// answered with a JSON object (Gemini CLI reads stderr when stdout is
// empty).
func TestReferenceExamples(t *testing.T) {
	seen := map[string]bool{}
	for name, raw := range examples(t) {
		in, err := gemini.Harness{}.Parse(raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		seen[in.Event()] = true
		m, err := in.Map()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := gemini.StageOf(in.Event())
		if in.Event() == gemini.PreCompress && !strings.Contains(string(raw), `"manual"`) {
			want = "" // an automatic one is a compression check, not a compaction
		}
		if (m == nil) != (want == "") || m != nil && m.Stage != want {
			t.Errorf("%s: mapped to %v, want %q", name, m, want)
		}
		if m != nil {
			if _, err := events.New(m.Stage, events.Meta{Source: "t", AgentID: "a", SessionID: in.Session(), RunID: "r"}, m.Payload); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		r, err := in.Answer(&harness.Outcome{})
		if err != nil || string(r.Stdout) != "{}" || r.Exit != 0 {
			t.Errorf("%s: answer %q exit %d, %v", name, r.Stdout, r.Exit, err)
		}
		for _, p := range []interceptors.Policy{interceptors.PolicyIgnore, interceptors.PolicyFail} {
			var o map[string]any
			if err := json.Unmarshal(in.Outage(p, errors.New("down")).Stdout, &o); err != nil {
				t.Errorf("%s: outage: %v", name, err)
			}
		}
	}
	for _, ev := range gemini.Events() {
		if !seen[ev] {
			t.Errorf("no example of %s", ev)
		}
	}
}

func parse(t *testing.T, raw string) *gemini.Input {
	t.Helper()
	in, err := gemini.ParseInput([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// What hookbus decided, in Gemini CLI's words.
func TestAnswers(t *testing.T) {
	tool := parse(t, `{"session_id":"s","hook_event_name":"BeforeTool","tool_name":"run_shell_command","tool_input":{"command":"rm -rf /","description":"x"}}`)
	after := parse(t, `{"session_id":"s","hook_event_name":"AfterTool","tool_name":"run_shell_command","tool_input":{"command":"ls"},"tool_response":{"llmContent":"a b","returnDisplay":"a b"}}`)
	agent := parse(t, `{"session_id":"s","hook_event_name":"BeforeAgent","prompt":"hi"}`)
	done := parse(t, `{"session_id":"s","hook_event_name":"AfterAgent","prompt":"hi","prompt_response":"hello","stop_hook_active":false}`)
	data := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	for _, tc := range []struct {
		in   *gemini.Input
		c    *interceptors.ChainResult
		want string
	}{
		{tool, &interceptors.ChainResult{Decision: interceptors.Deny, Reason: "no rm -rf"}, `{"decision":"deny","reason":"no rm -rf"}`},
		{tool, &interceptors.ChainResult{Decision: interceptors.Modify, Data: data(events.ToolBefore{Call: events.ToolCall{Name: "run_shell_command", Arguments: json.RawMessage(`{"command":"ls","description":"x"}`)}})},
			`{"hookSpecificOutput":{"hookEventName":"BeforeTool","tool_input":{"command":"ls","description":"x"}}}`},
		{tool, &interceptors.ChainResult{Decision: interceptors.Stop, Reason: "halt"}, `{"continue":false,"stopReason":"halt"}`},
		{tool, &interceptors.ChainResult{Decision: interceptors.Ask, Reason: "sure?"}, `{"systemMessage":"sure?","decision":"ask","reason":"sure?"}`},
		{tool, &interceptors.ChainResult{Decision: interceptors.Mock, Mock: &events.ToolResult{Content: "pretend"}}, `{"decision":"deny","reason":"pretend"}`},
		{after, &interceptors.ChainResult{Decision: interceptors.Allow, Context: []string{"note"}}, `{"hookSpecificOutput":{"hookEventName":"AfterTool","additionalContext":"note"}}`},
		{after, &interceptors.ChainResult{Decision: interceptors.Modify, Data: data(events.ToolAfter{Result: events.ToolResult{Content: "[redacted]"}})}, `{"decision":"deny","reason":"[redacted]"}`},
		{agent, &interceptors.ChainResult{Decision: interceptors.Deny, Reason: "off topic"}, `{"decision":"deny","reason":"off topic"}`},
		{agent, &interceptors.ChainResult{Decision: interceptors.Modify, Data: data(events.Intake{Prompt: "hi\n\nbe brief"})}, `{"hookSpecificOutput":{"hookEventName":"BeforeAgent","additionalContext":"be brief"}}`},
		{done, &interceptors.ChainResult{Decision: interceptors.Continue, Context: []string{"run the tests"}}, `{"decision":"deny","reason":"run the tests"}`},
		{done, &interceptors.ChainResult{Decision: interceptors.Allow}, `{}`},
	} {
		r, err := tc.in.Answer(&harness.Outcome{Chain: tc.c})
		if err != nil {
			t.Fatal(err)
		}
		if string(r.Stdout) != tc.want {
			t.Errorf("%s %s:\n got  %s\n want %s", tc.in.Event(), tc.c.Decision, r.Stdout, tc.want)
		}
	}
	if r := tool.Outage(interceptors.PolicyFail, errors.New("down")); !json.Valid(r.Stdout) || !contains(r.Stdout, `"decision":"deny"`) {
		t.Errorf("outage under fail: %s", r.Stdout)
	}
	if r := tool.Outage(interceptors.PolicyIgnore, errors.New("down")); contains(r.Stdout, `"decision"`) || !contains(r.Stdout, "proceeds unchecked") {
		t.Errorf("outage under ignore: %s", r.Stdout)
	}
}

// Input that lacks what its event needs.
func TestBadInput(t *testing.T) {
	for _, raw := range []string{
		`{"session_id":"s"}`,
		`{"session_id":"s","hook_event_name":"BeforeTool","tool_input":{}}`,
		`{"session_id":"s","hook_event_name":"BeforeTool","tool_name":"x","tool_input":[1]}`,
		`not json`,
	} {
		in, err := gemini.Harness{}.Parse([]byte(raw))
		if err == nil {
			_, err = in.Map()
		}
		if !errors.Is(err, harness.ErrBadInput) {
			t.Errorf("%s: %v", raw, err)
		}
	}
}

func contains(b []byte, s string) bool { return strings.Contains(string(b), s) }
