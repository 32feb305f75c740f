package claudecode_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/hooks/harness"
	"github.com/hookbus/hookbus/interceptors"
)

// Claude Code's hook inputs, as its hooks reference shows them, become the
// stage events the bridge records.
func TestToHookbus(t *testing.T) {
	common := `"session_id":"abc123","transcript_path":"/home/u/.claude/projects/p/abc123.jsonl","cwd":"/home/u/p","permission_mode":"default"`
	for _, tc := range []struct {
		input   string
		stage   events.Stage
		subject string
		payload any
	}{
		{`"hook_event_name":"UserPromptSubmit","prompt":"Write a function"`, events.StageIntake, "", events.Intake{Prompt: "Write a function"}},
		{`"hook_event_name":"SessionStart","source":"startup","model":"claude-sonnet-4-5"`, events.StageRunStarted, "", events.RunStarted{}},
		{`"hook_event_name":"SessionStart","source":"resume"`, events.StageRunStarted, "", events.RunStarted{Resumed: true}},
		{`"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"/p/a.txt","content":"x"},"tool_use_id":"toolu_01"`,
			events.StageToolBefore, "Write", events.ToolBefore{Call: events.ToolCall{ID: "toolu_01", Name: "Write", Arguments: json.RawMessage(`{"file_path":"/p/a.txt","content":"x"}`),
				Action: &events.Action{Kind: events.KindFileWrite, Paths: []string{"/p/a.txt"}}}}},
		{`"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":{"stdout":"a","stderr":"warn","interrupted":false,"isImage":false},"tool_use_id":"toolu_02"`,
			events.StageToolAfter, "Bash", events.ToolAfter{Call: events.ToolCall{ID: "toolu_02", Name: "Bash", Arguments: json.RawMessage(`{"command":"ls"}`),
				Action: &events.Action{Kind: events.KindShell, Command: "ls"}},
				Result: events.ToolResult{CallID: "toolu_02", Name: "Bash", Content: "a\nwarn"}}},
		{`"hook_event_name":"PostToolUseFailure","tool_name":"Bash","tool_input":{"command":"false"},"tool_use_id":"toolu_03","error":"Exit code 1","is_interrupt":false`,
			events.StageToolFailed, "Bash", events.ToolFailed{Call: events.ToolCall{ID: "toolu_03", Name: "Bash", Arguments: json.RawMessage(`{"command":"false"}`),
				Action: &events.Action{Kind: events.KindShell, Command: "false"}}, Error: "Exit code 1"}},
		{`"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"rm x"}`,
			events.StageApprovalRequested, "Bash", events.ApprovalRequested{Call: events.ToolCall{Name: "Bash", Arguments: json.RawMessage(`{"command":"rm x"}`),
				Action: &events.Action{Kind: events.KindShell, Command: "rm x"}}, Reason: "Claude Code asks for permission"}},
		{`"hook_event_name":"SubagentStart","agent_id":"agent-7","agent_type":"Explore"`,
			events.StageSubagentBefore, "Explore", events.SubagentBefore{AgentID: "Explore", RunID: "agent-7", Description: "Claude Code sub-agent Explore"}},
		{`"hook_event_name":"SubagentStop","agent_id":"agent-7","agent_type":"Explore","stop_hook_active":false,"last_assistant_message":"found it"`,
			events.StageSubagentAfter, "Explore", events.SubagentAfter{AgentID: "Explore", RunID: "agent-7", Answer: "found it", Success: true}},
		{`"hook_event_name":"PreCompact","trigger":"manual","custom_instructions":""`, events.StageCompactBefore, "", events.CompactBefore{Manual: true}},
		{`"hook_event_name":"PostCompact","trigger":"auto","compact_summary":"sum"`, events.StageCompactAfter, "", events.CompactAfter{Summary: "sum"}},
		{`"hook_event_name":"Stop","stop_hook_active":true,"last_assistant_message":"done!"`, events.StageStop, "", events.Stop{Reason: "done", Answer: "done!", Continues: 1}},
		{`"hook_event_name":"SessionEnd","reason":"prompt_input_exit"`, events.StageRunCompleted, "", events.RunCompleted{Reason: "done", Detail: "Claude Code session ended: prompt_input_exit"}},
	} {
		in, err := claudecode.ParseInput([]byte("{" + common + "," + tc.input + "}"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := in.ToHookbus()
		if err != nil {
			t.Fatalf("%s: %v", in.HookEventName, err)
		}
		if m.Stage != tc.stage || m.Subject != tc.subject || !reflect.DeepEqual(m.Payload, tc.payload) {
			t.Errorf("%s: %s %q %+v; want %s %q %+v", in.HookEventName, m.Stage, m.Subject, m.Payload, tc.stage, tc.subject, tc.payload)
		}
		if in.SessionID != "abc123" || in.Cwd != "/home/u/p" {
			t.Errorf("%s: common fields %+v", in.HookEventName, in)
		}
		if _, err := events.New(m.Stage, events.Meta{Source: "bridge", AgentID: "claude-code", SessionID: in.SessionID, RunID: "r", Subject: m.Subject}, m.Payload); err != nil {
			t.Errorf("%s: event: %v", in.HookEventName, err)
		}
	}
}

func TestToHookbusErrors(t *testing.T) {
	for input, want := range map[string]error{
		`{"hook_event_name":"Notification","message":"Claude needs your permission"}`: claudecode.ErrUnmapped,
		`{"hook_event_name":"PermissionDenied","tool_name":"Bash"}`:                   claudecode.ErrUnmapped,
		`{"hook_event_name":"PreToolUse","tool_input":{}}`:                            harness.ErrBadInput,
		`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":"ls"}`:       harness.ErrBadInput,
	} {
		in, err := claudecode.ParseInput([]byte(input))
		if err == nil {
			_, err = in.ToHookbus()
		}
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", input, err, want)
		}
	}
	for _, bad := range []string{``, `[1]`, `{"session_id":"x"}`, `{"hook_event_name":`} {
		if _, err := claudecode.ParseInput([]byte(bad)); !errors.Is(err, harness.ErrBadInput) {
			t.Errorf("ParseInput(%q): %v", bad, err)
		}
	}
}

// The bridge round trip: Claude Code's input becomes a stage event, the
// chain decides, Answer words the outcome as Claude Code's output, and
// Claude Code's reading of that output (Decide, the same protocol) is what
// the chain decided.
func TestAnswerRoundTrip(t *testing.T) {
	pre := `{"session_id":"s","transcript_path":"","cwd":"/p","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /tmp/x"},"tool_use_id":"toolu_1"}`
	post := `{"session_id":"s","transcript_path":"","cwd":"/p","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"cat .env"},"tool_response":{"stdout":"K=v","stderr":"","interrupted":false,"isImage":false},"tool_use_id":"toolu_1"}`
	prompt := `{"session_id":"s","transcript_path":"","cwd":"/p","hook_event_name":"UserPromptSubmit","prompt":"fix it"}`
	stop := `{"session_id":"s","transcript_path":"","cwd":"/p","hook_event_name":"Stop","stop_hook_active":false}`
	for _, tc := range []struct {
		name  string
		input string
		dec   *interceptors.Decision
		want  interceptors.Kind
		check func(t *testing.T, o *claudecode.Output, d *interceptors.Decision)
	}{
		{"allow", pre, nil, interceptors.Allow, func(t *testing.T, o *claudecode.Output, _ *interceptors.Decision) {
			if string(o.JSON()) != "{}" {
				t.Fatalf("allow answers %s", o.JSON())
			}
		}},
		{"deny", pre, &interceptors.Decision{Kind: interceptors.Deny, Reason: "no rm -rf"}, interceptors.Deny, func(t *testing.T, _ *claudecode.Output, d *interceptors.Decision) {
			if d.Reason != "no rm -rf" {
				t.Fatalf("reason %q", d.Reason)
			}
		}},
		{"ask", pre, &interceptors.Decision{Kind: interceptors.Ask, Reason: "confirm"}, interceptors.Ask, nil},
		{"stop", pre, &interceptors.Decision{Kind: interceptors.Stop, Reason: "budget"}, interceptors.Stop, nil},
		{"mock", pre, interceptors.Mocked("mocked listing", false), interceptors.Deny, func(t *testing.T, _ *claudecode.Output, d *interceptors.Decision) {
			if d.Reason != "mocked listing" {
				t.Fatalf("mock as deny reason %q", d.Reason)
			}
		}},
		{"modify", pre, &interceptors.Decision{Kind: interceptors.Modify, Patch: []interceptors.PatchOp{
			{Op: "replace", Path: "/call/arguments/command", Value: json.RawMessage(`"rm -ri /tmp/x"`)}}}, interceptors.Modify,
			func(t *testing.T, o *claudecode.Output, d *interceptors.Decision) {
				if o.HookSpecificOutput.PermissionDecision != "" {
					t.Fatalf("a rewrite approves the call: %s", o.JSON())
				}
				if p := payloadOf[events.ToolBefore](t, d.Data); string(p.Call.Arguments) != `{"command":"rm -ri /tmp/x"}` {
					t.Fatalf("arguments %s", p.Call.Arguments)
				}
			}},
		{"context after a tool", post, &interceptors.Decision{Kind: interceptors.Allow, Context: "this file is generated"}, interceptors.Allow,
			func(t *testing.T, _ *claudecode.Output, d *interceptors.Decision) {
				if d.Context != "this file is generated" {
					t.Fatalf("context %q", d.Context)
				}
			}},
		{"redact after a tool", post, &interceptors.Decision{Kind: interceptors.Modify, Patch: []interceptors.PatchOp{
			{Op: "replace", Path: "/result/content", Value: json.RawMessage(`"K=[REDACTED]"`)}}}, interceptors.Modify,
			func(t *testing.T, _ *claudecode.Output, d *interceptors.Decision) {
				if p := payloadOf[events.ToolAfter](t, d.Data); p.Result.Content != "K=[REDACTED]" {
					t.Fatalf("result %q", p.Result.Content)
				}
			}},
		{"deny a prompt", prompt, &interceptors.Decision{Kind: interceptors.Deny, Reason: "off topic"}, interceptors.Deny, nil},
		{"add to a prompt", prompt, &interceptors.Decision{Kind: interceptors.Modify, Patch: []interceptors.PatchOp{
			{Op: "replace", Path: "/prompt", Value: json.RawMessage(`"fix it\n\nbranch: main"`)}}}, interceptors.Modify,
			func(t *testing.T, o *claudecode.Output, d *interceptors.Decision) {
				if o.HookSpecificOutput.AdditionalContext != "branch: main" {
					t.Fatalf("output %s", o.JSON())
				}
				if p := payloadOf[events.Intake](t, d.Data); p.Prompt != "fix it\n\nbranch: main" {
					t.Fatalf("prompt %q", p.Prompt)
				}
			}},
		{"continue", stop, &interceptors.Decision{Kind: interceptors.Continue, Context: "run the tests"}, interceptors.Continue,
			func(t *testing.T, o *claudecode.Output, d *interceptors.Decision) {
				if o.Decision != "block" || o.Reason != "run the tests" || d.Context != "run the tests" {
					t.Fatalf("output %s, decision %+v", o.JSON(), d)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := claudecode.ParseInput([]byte(tc.input))
			if err != nil {
				t.Fatal(err)
			}
			m, err := in.ToHookbus()
			if err != nil {
				t.Fatal(err)
			}
			ev, err := events.New(m.Stage, events.Meta{Source: "bridge", AgentID: "claude-code", SessionID: "s", RunID: "r", Subject: m.Subject}, m.Payload)
			if err != nil {
				t.Fatal(err)
			}
			chain := interceptors.NewChain()
			if _, err := chain.Register(interceptors.Registration{Plugin: "p", Stage: m.Stage}, interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
				return tc.dec, nil
			})); err != nil {
				t.Fatal(err)
			}
			out, err := chain.Run(context.Background(), ev)
			if err != nil {
				t.Fatal(err)
			}
			o, err := claudecode.Answer(in, out, claudecode.AnswerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			d, err := claudecode.Decide(in.HookEventName, ev, claudecode.Reply{Stdout: o.JSON()})
			if err != nil {
				t.Fatalf("Claude Code would not read %s: %v", o.JSON(), err)
			}
			if d == nil {
				d = &interceptors.Decision{Kind: interceptors.Allow}
			}
			if d.Kind != tc.want {
				t.Fatalf("output %s reads as %s, want %s", o.JSON(), d.Kind, tc.want)
			}
			if tc.check != nil {
				tc.check(t, o, d)
			}
		})
	}
}

// Warnings and fail-open failures reach the user as systemMessage; a
// rewrite Claude Code cannot apply is said, not dropped.
func TestAnswerNotes(t *testing.T) {
	in, err := claudecode.ParseInput([]byte(`{"session_id":"s","hook_event_name":"UserPromptSubmit","prompt":"fix it"}`))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(events.Intake{Prompt: "FIX IT"})
	out := &interceptors.ChainResult{Stage: events.StageIntake, Decision: interceptors.Modify, Data: data, Records: []interceptors.CallRecord{
		{Plugin: "lint", Warnings: []string{"shouting"}},
		{Plugin: "pii", Failure: &interceptors.CallFailure{Kind: events.FailTimeout, Outcome: interceptors.FailedOpen}},
	}}
	o, err := claudecode.Answer(in, out, claudecode.AnswerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"shouting", "interceptor pii failed (timeout); the action proceeds", "rewrote the prompt, which Claude Code cannot replace; they made it: FIX IT"} {
		if !strings.Contains(o.SystemMessage, want) {
			t.Errorf("systemMessage %q lacks %q", o.SystemMessage, want)
		}
	}
	pre, _ := claudecode.ParseInput([]byte(`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`))
	tb, _ := json.Marshal(events.ToolBefore{Call: events.ToolCall{Name: "Bash", Arguments: json.RawMessage(`{"command":"ls -a"}`)}})
	o, err = claudecode.Answer(pre, &interceptors.ChainResult{Stage: events.StageToolBefore, Decision: interceptors.Modify, Data: tb}, claudecode.AnswerOptions{ApproveModified: true})
	if err != nil {
		t.Fatal(err)
	}
	if hs := o.HookSpecificOutput; hs.PermissionDecision != "allow" || string(hs.UpdatedInput) != `{"command":"ls -a"}` {
		t.Fatalf("ApproveModified: %s", o.JSON())
	}
	if got := string(claudecode.PermissionAnswer("deny", "not now", nil).JSON()); got != `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"not now"}}}` {
		t.Fatalf("PermissionAnswer: %s", got)
	}
}
