package codex_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/codex"
	"github.com/hookbus/hookbus/hooks/harness"
	"github.com/hookbus/hookbus/interceptors"
)

// wire are the fields Codex CLI takes in a hook's JSON output, per event
// (its output structs refuse any other): the top level and
// hookSpecificOutput ("-": none).
var wire = map[string][2][]string{
	"PreToolUse":        {{"continue", "stopReason", "suppressOutput", "systemMessage", "decision", "reason", "hookSpecificOutput"}, {"hookEventName", "permissionDecision", "permissionDecisionReason", "updatedInput", "additionalContext"}},
	"PermissionRequest": {{"continue", "stopReason", "suppressOutput", "systemMessage", "hookSpecificOutput"}, {"hookEventName", "decision"}},
	"PostToolUse":       {{"continue", "stopReason", "suppressOutput", "systemMessage", "decision", "reason", "hookSpecificOutput"}, {"hookEventName", "additionalContext", "updatedMCPToolOutput"}},
	"SessionStart":      {{"continue", "stopReason", "suppressOutput", "systemMessage", "hookSpecificOutput"}, {"hookEventName", "additionalContext"}},
	"UserPromptSubmit":  {{"continue", "stopReason", "suppressOutput", "systemMessage", "decision", "reason", "hookSpecificOutput"}, {"hookEventName", "additionalContext"}},
	"Stop":              {{"continue", "stopReason", "suppressOutput", "systemMessage", "decision", "reason"}, nil},
}

// check holds out to what Codex CLI takes on event: only its fields, and
// on PreToolUse none of the values it refuses.
func check(t *testing.T, event string, out []byte) {
	t.Helper()
	if len(out) == 0 {
		return
	}
	var o map[string]json.RawMessage
	if err := json.Unmarshal(out, &o); err != nil {
		t.Fatalf("%s: %s is not a JSON object", event, out)
	}
	fields, ok := wire[event]
	if !ok {
		fields = [2][]string{{"continue", "stopReason", "suppressOutput", "systemMessage"}, nil}
	}
	for k := range o {
		if !slices.Contains(fields[0], k) {
			t.Errorf("%s: Codex CLI refuses %q: %s", event, k, out)
		}
	}
	var hs map[string]json.RawMessage
	_ = json.Unmarshal(o["hookSpecificOutput"], &hs)
	for k := range hs {
		if !slices.Contains(fields[1], k) {
			t.Errorf("%s: Codex CLI refuses hookSpecificOutput.%s: %s", event, k, out)
		}
	}
	if event == "PreToolUse" {
		for _, bad := range []string{`"continue"`, `"stopReason"`, `"suppressOutput"`, `"permissionDecision":"ask"`} {
			if strings.Contains(string(out), bad) {
				t.Errorf("PreToolUse: Codex CLI refuses %s: %s", bad, out)
			}
		}
		if _, ok := hs["updatedInput"]; ok && !strings.Contains(string(hs["permissionDecision"]), "allow") {
			t.Errorf("PreToolUse: updatedInput without permissionDecision allow: %s", out)
		}
		if strings.Contains(string(hs["permissionDecision"]), "allow") && hs["updatedInput"] == nil {
			t.Errorf("PreToolUse: permissionDecision allow without updatedInput: %s", out)
		}
	}
	if event == "PermissionRequest" && strings.Contains(string(out), "updatedInput") {
		t.Errorf("PermissionRequest: Codex CLI refuses updatedInput: %s", out)
	}
}

// Every event of Codex CLI maps to its stage or a harness.event; nothing to
// say is said with nothing (empty stdout), and every answer is one Codex
// CLI takes.
func TestReferenceExamples(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "reference", "*.json"))
	seen := map[string]bool{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in, err := codex.Harness{}.Parse(raw)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		seen[in.Event()] = true
		m, err := in.Map()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if want := codex.StageOf(in.Event()); (m == nil) != (want == "") || m != nil && m.Stage != want {
			t.Errorf("%s: mapped to %v, want %q", f, m, want)
		}
		if m != nil {
			if _, err := events.New(m.Stage, events.Meta{Source: "t", AgentID: "a", SessionID: in.Session(), RunID: "r"}, m.Payload); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
		r, err := in.Answer(&harness.Outcome{})
		if err != nil || len(r.Stdout) != 0 {
			t.Errorf("%s: answer %q, %v", f, r.Stdout, err)
		}
		for _, p := range []interceptors.Policy{interceptors.PolicyIgnore, interceptors.PolicyFail} {
			check(t, in.Event(), in.Outage(p, errors.New("down")).Stdout)
		}
	}
	for _, ev := range codex.Events() {
		if !seen[ev] {
			t.Errorf("no example of %s", ev)
		}
	}
}

// hookbus' outcomes within Codex CLI's rules.
func TestAnswers(t *testing.T) {
	in := func(raw string) harness.Input {
		t.Helper()
		i, err := codex.Harness{}.Parse([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	pre := in(`{"session_id":"s","turn_id":"t","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"touch original.txt"},"tool_use_id":"c1"}`)
	perm := in(`{"session_id":"s","turn_id":"t","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"ls"}}`)
	post := in(`{"session_id":"s","turn_id":"t","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":"a b","tool_use_id":"c1"}`)
	stop := in(`{"session_id":"s","turn_id":"t","hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"done"}`)
	intr := in(`{"session_id":"s","turn_id":"t","hook_event_name":"Interrupt"}`)
	data := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	rewritten := data(events.ToolBefore{Call: events.ToolCall{ID: "c1", Name: "Bash", Arguments: json.RawMessage(`{"command":"touch rewritten.txt"}`)}})
	for _, tc := range []struct {
		in   harness.Input
		out  *harness.Outcome
		want string
	}{
		{pre, &harness.Outcome{Chain: &interceptors.ChainResult{Decision: interceptors.Deny, Reason: "no"}},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}`},
		{pre, &harness.Outcome{Chain: &interceptors.ChainResult{Decision: interceptors.Deny}},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"denied by a hookbus interceptor"}}`},
		{pre, &harness.Outcome{Chain: &interceptors.ChainResult{Decision: interceptors.Modify, Data: rewritten}},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"input rewritten by hookbus interceptors","updatedInput":{"command":"touch rewritten.txt"}}}`},
		{pre, &harness.Outcome{Chain: &interceptors.ChainResult{Decision: interceptors.Ask, Reason: "check"}},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"a person must approve this call, which Codex CLI's PreToolUse cannot ask for: check"}}`},
		{pre, &harness.Outcome{Chain: &interceptors.ChainResult{Decision: interceptors.Stop, Reason: "halt"}},
			`{"systemMessage":"hookbus stopped the run, which Codex CLI's PreToolUse cannot: the call is denied","hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"halt"}}`},
		{pre, &harness.Outcome{Chain: &interceptors.ChainResult{Decision: interceptors.Allow}}, ``},
		{perm, &harness.Outcome{Approval: &events.ApprovalResolved{Approved: true, Action: events.ActionApprove}},
			`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}`},
		{perm, &harness.Outcome{Approval: &events.ApprovalResolved{Approved: true, Action: events.ActionApprove, Arguments: json.RawMessage(`{"command":"ls -la"}`)}},
			`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"approved with changed arguments, which Codex CLI cannot run in place of the asked ones: run it again as {\"command\":\"ls -la\"}"}}}`},
		{post, &harness.Outcome{Chain: &interceptors.ChainResult{Decision: interceptors.Modify, Data: data(events.ToolAfter{Call: events.ToolCall{Name: "Bash"}, Result: events.ToolResult{Content: "x"}})}},
			`{"systemMessage":"hookbus interceptors replaced this tool's output, which Codex CLI can replace only for an MCP server's tool"}`},
		{stop, &harness.Outcome{Chain: &interceptors.ChainResult{Decision: interceptors.Continue, Context: []string{"run the tests"}}},
			`{"decision":"block","reason":"run the tests"}`},
		{intr, &harness.Outcome{}, ``},
	} {
		r, err := tc.in.Answer(tc.out)
		if err != nil {
			t.Fatal(err)
		}
		if string(r.Stdout) != tc.want {
			t.Errorf("%s:\n got  %s\n want %s", tc.in.Event(), r.Stdout, tc.want)
		}
		check(t, tc.in.Event(), r.Stdout)
	}
	m, err := intr.Map()
	if err != nil || m.Stage != events.StageRunCompleted || m.Payload.(events.RunCompleted).Reason != events.ReasonInterrupted {
		t.Errorf("Interrupt: %+v, %v", m, err)
	}
	if intr.Limit() != codex.EndLimit || pre.Limit() != codex.DefaultHookLimit {
		t.Errorf("limits: %s, %s", intr.Limit(), pre.Limit())
	}
}
