package claudecode_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/interceptors"
)

// TestDecide is the table of what a hook's exit status and output mean on
// each intercepting event.
func TestDecide(t *testing.T) {
	bash := func(t *testing.T) *events.Event {
		return toolBefore(t, "Bash", `{"command":"rm -rf /","description":"clean"}`)
	}
	after := func(t *testing.T) *events.Event {
		return toolAfter(t, "Bash", `{"command":"cat .env"}`, "TOKEN=s3cr3t")
	}
	intake := func(t *testing.T) *events.Event {
		return event(t, events.StageIntake, "", events.Intake{Prompt: "fix it"})
	}
	stop := func(t *testing.T) *events.Event {
		return event(t, events.StageStop, "", events.Stop{Reason: "done", Answer: "fixed"})
	}
	sub := func(t *testing.T) *events.Event {
		return event(t, events.StageSubagentBefore, "reviewer", events.SubagentBefore{AgentID: "reviewer", Instruction: "review main.go"})
	}
	type want struct {
		kind     interceptors.Kind
		reason   string
		context  string
		warnings []string
		check    func(t *testing.T, d *interceptors.Decision)
		err      error  // a failure: the error wraps it
		errText  string // and says this
	}
	for _, tc := range []struct {
		name  string
		event claudecode.HookEvent
		ev    func(*testing.T) *events.Event
		reply claudecode.Reply
		want  want
	}{
		// Exit statuses.
		{"exit 0 no output", claudecode.PreToolUse, bash, claudecode.Reply{}, want{kind: interceptors.Allow}},
		{"exit 0 plain text", claudecode.PreToolUse, bash, claudecode.Reply{Stdout: []byte("looks fine\n")}, want{kind: interceptors.Allow}},
		{"exit 2 blocks a tool call", claudecode.PreToolUse, bash, claudecode.Reply{ExitCode: 2, Stderr: []byte("rm -rf is not allowed\n"), Stdout: []byte(`{"continue":true}`)},
			want{kind: interceptors.Deny, reason: "rm -rf is not allowed"}},
		{"exit 2 blocks a prompt", claudecode.UserPromptSubmit, intake, claudecode.Reply{ExitCode: 2, Stderr: []byte("no secrets in prompts")},
			want{kind: interceptors.Deny, reason: "no secrets in prompts"}},
		{"exit 2 keeps a run going", claudecode.Stop, stop, claudecode.Reply{ExitCode: 2, Stderr: []byte("run the tests first")},
			want{kind: interceptors.Continue, reason: "run the tests first", context: "run the tests first"}},
		{"exit 2 without a reason on stop", claudecode.Stop, stop, claudecode.Reply{ExitCode: 2},
			want{kind: interceptors.Continue, reason: "blocked by a Stop hook", context: "blocked by a Stop hook"}},
		{"exit 2 after a tool tells the model", claudecode.PostToolUse, after, claudecode.Reply{ExitCode: 2, Stderr: []byte("lint failed: main.go:3")},
			want{kind: interceptors.Allow, context: "lint failed: main.go:3"}},
		{"exit 2 on SubagentStart cannot block", claudecode.SubagentStart, sub, claudecode.Reply{ExitCode: 2, Stderr: []byte("nope")},
			want{kind: interceptors.Allow, warnings: []string{"nope"}}},
		{"exit 1 is a non-blocking error", claudecode.PreToolUse, bash, claudecode.Reply{ExitCode: 1, Stderr: []byte("jq: command not found")},
			want{err: claudecode.ErrHookExit, errText: "exit status 1 (Claude Code's non-blocking error): jq: command not found"}},
		{"exit 127", claudecode.PreToolUse, bash, claudecode.Reply{ExitCode: 127, Stderr: []byte("sh: 1: ./missing.sh: not found")},
			want{err: claudecode.ErrHookExit, errText: "exit status 127"}},
		{"killed by a signal", claudecode.Stop, stop, claudecode.Reply{ExitCode: 137},
			want{err: claudecode.ErrHookExit, errText: "exit status 137"}},

		// PreToolUse's output.
		{"permissionDecision deny", claudecode.PreToolUse, bash,
			claudecode.Reply{Stdout: []byte(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"destructive"}}`)},
			want{kind: interceptors.Deny, reason: "destructive"}},
		{"permissionDecision ask", claudecode.PreToolUse, bash,
			claudecode.Reply{Stdout: []byte(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"sure?"}}`)},
			want{kind: interceptors.Ask, reason: "sure?"}},
		{"ask with updatedInput asks about the call as it stands", claudecode.PreToolUse, bash,
			claudecode.Reply{Stdout: []byte(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","updatedInput":{"command":"ls"}}}`)},
			want{kind: interceptors.Ask, warnings: []string{"updatedInput ignored with ask: the call is asked about as it stands"}}},
		{"permissionDecision allow", claudecode.PreToolUse, bash,
			claudecode.Reply{Stdout: []byte(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"safe"}}`)},
			want{kind: interceptors.Allow, reason: "safe"}},
		{"permissionDecision defer", claudecode.PreToolUse, bash,
			claudecode.Reply{Stdout: []byte(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"defer"}}`)},
			want{kind: interceptors.Allow}},
		{"updatedInput rewrites the call", claudecode.PreToolUse, bash,
			claudecode.Reply{Stdout: []byte(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"rm -ri ./build"}}}`)},
			want{kind: interceptors.Modify, check: func(t *testing.T, d *interceptors.Decision) {
				p := payloadOf[events.ToolBefore](t, d.Data)
				if string(p.Call.Arguments) != `{"command":"rm -ri ./build"}` || p.Call.ID != "call-1" || p.Call.Name != "Bash" {
					t.Fatalf("payload %s", d.Data)
				}
			}}},
		{"updatedInput without a decision", claudecode.PreToolUse, bash,
			claudecode.Reply{Stdout: []byte(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"command":"ls"}}}`)},
			want{kind: interceptors.Modify}},
		{"deprecated decision block", claudecode.PreToolUse, bash, claudecode.Reply{Stdout: []byte(`{"decision":"block","reason":"old style"}`)},
			want{kind: interceptors.Deny, reason: "old style"}},
		{"deprecated decision approve", claudecode.PreToolUse, bash, claudecode.Reply{Stdout: []byte(`{"decision":"approve","reason":"ok"}`)},
			want{kind: interceptors.Allow, reason: "ok"}},
		{"continue false stops the run", claudecode.PreToolUse, bash, claudecode.Reply{Stdout: []byte(`{"continue":false,"stopReason":"budget spent","systemMessage":"stopping"}`)},
			want{kind: interceptors.Stop, reason: "budget spent", warnings: []string{"stopping"}}},
		{"systemMessage is a warning", claudecode.PreToolUse, bash, claudecode.Reply{Stdout: []byte(`{"systemMessage":"careful","suppressOutput":true}`)},
			want{kind: interceptors.Allow, warnings: []string{"careful"}}},
		{"additionalContext before a tool is not given", claudecode.PreToolUse, bash,
			claudecode.Reply{Stdout: []byte(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"x"}}`)},
			want{kind: interceptors.Allow, warnings: []string{"additionalContext not given to the model: hookbus gives context only after the tool ran (PostToolUse)"}}},

		// PostToolUse's output.
		{"additionalContext after a tool", claudecode.PostToolUse, after,
			claudecode.Reply{Stdout: []byte(`{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"the file is generated"}}`)},
			want{kind: interceptors.Allow, context: "the file is generated"}},
		{"decision block after a tool tells the model", claudecode.PostToolUse, after,
			claudecode.Reply{Stdout: []byte(`{"decision":"block","reason":"format the file","hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"gofmt -l lists it"}}`)},
			want{kind: interceptors.Allow, context: "format the file\ngofmt -l lists it"}},
		{"updatedToolOutput replaces the result", claudecode.PostToolUse, after,
			claudecode.Reply{Stdout: []byte(`{"hookSpecificOutput":{"hookEventName":"PostToolUse","updatedToolOutput":{"stdout":"TOKEN=[REDACTED]","stderr":"","interrupted":false,"isImage":false},"additionalContext":"redacted"}}`)},
			want{kind: interceptors.Modify, context: "redacted", check: func(t *testing.T, d *interceptors.Decision) {
				if p := payloadOf[events.ToolAfter](t, d.Data); p.Result.Content != "TOKEN=[REDACTED]" {
					t.Fatalf("result %q", p.Result.Content)
				}
			}}},
		{"continue false after a tool is refused", claudecode.PostToolUse, after, claudecode.Reply{Stdout: []byte(`{"continue":false,"stopReason":"leak"}`)},
			want{err: interceptors.ErrBadReply, errText: "continue false cannot stop the run after a tool ran"}},

		// UserPromptSubmit's output.
		{"plain text is context for the prompt", claudecode.UserPromptSubmit, intake, claudecode.Reply{Stdout: []byte("Today is Monday.\n")},
			want{kind: interceptors.Modify, check: func(t *testing.T, d *interceptors.Decision) {
				if p := payloadOf[events.Intake](t, d.Data); p.Prompt != "fix it\n\nToday is Monday." {
					t.Fatalf("prompt %q", p.Prompt)
				}
			}}},
		{"additionalContext for the prompt", claudecode.UserPromptSubmit, intake,
			claudecode.Reply{Stdout: []byte(`{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"branch: main"}}`)},
			want{kind: interceptors.Modify, check: func(t *testing.T, d *interceptors.Decision) {
				if p := payloadOf[events.Intake](t, d.Data); p.Prompt != "fix it\n\nbranch: main" {
					t.Fatalf("prompt %q", p.Prompt)
				}
			}}},
		{"decision block refuses the prompt", claudecode.UserPromptSubmit, intake, claudecode.Reply{Stdout: []byte(`{"decision":"block","reason":"contains a key"}`)},
			want{kind: interceptors.Deny, reason: "contains a key"}},
		{"continue false on a prompt denies", claudecode.UserPromptSubmit, intake, claudecode.Reply{Stdout: []byte(`{"continue":false,"stopReason":"maintenance"}`)},
			want{kind: interceptors.Deny, reason: "maintenance"}},

		// Stop's output.
		{"decision block keeps the run going", claudecode.Stop, stop, claudecode.Reply{Stdout: []byte(`{"decision":"block","reason":"tests are failing"}`)},
			want{kind: interceptors.Continue, reason: "tests are failing", context: "tests are failing"}},
		{"decision block without a reason", claudecode.Stop, stop, claudecode.Reply{Stdout: []byte(`{"decision":"block"}`)},
			want{err: interceptors.ErrBadReply, errText: "decision block without a reason"}},
		{"continue false on stop", claudecode.Stop, stop, claudecode.Reply{Stdout: []byte(`{"continue":false,"stopReason":"enough"}`)},
			want{kind: interceptors.Stop, reason: "enough"}},

		// SubagentStart's output.
		{"additionalContext for a sub-agent", claudecode.SubagentStart, sub,
			claudecode.Reply{Stdout: []byte(`{"hookSpecificOutput":{"hookEventName":"SubagentStart","additionalContext":"use the style guide"}}`)},
			want{kind: interceptors.Modify, check: func(t *testing.T, d *interceptors.Decision) {
				if p := payloadOf[events.SubagentBefore](t, d.Data); p.Instruction != "review main.go\n\nuse the style guide" || p.AgentID != "reviewer" {
					t.Fatalf("payload %+v", p)
				}
			}}},

		// Malformed and huge output.
		{"malformed JSON", claudecode.PreToolUse, bash, claudecode.Reply{Stdout: []byte(`{"decision": "block", "reason": `)},
			want{err: interceptors.ErrBadReply, errText: "hook output is not Claude Code's JSON output"}},
		{"wrong field type", claudecode.PreToolUse, bash, claudecode.Reply{Stdout: []byte(`{"continue":"no"}`)},
			want{err: interceptors.ErrBadReply, errText: "not Claude Code's JSON output"}},
		{"unknown permission decision", claudecode.PreToolUse, bash,
			claudecode.Reply{Stdout: []byte(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"maybe"}}`)},
			want{err: interceptors.ErrBadReply, errText: `permissionDecision "maybe"`}},
		{"updatedInput not an object", claudecode.PreToolUse, bash,
			claudecode.Reply{Stdout: []byte(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":"ls"}}`)},
			want{err: interceptors.ErrBadReply, errText: "updatedInput is not a JSON object"}},
		{"output for another event", claudecode.PreToolUse, bash,
			claudecode.Reply{Stdout: []byte(`{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"x"}}`)},
			want{err: interceptors.ErrBadReply, errText: "hookSpecificOutput is for PostToolUse"}},
		{"unknown decision", claudecode.PreToolUse, bash, claudecode.Reply{Stdout: []byte(`{"decision":"deny"}`)},
			want{err: interceptors.ErrBadReply, errText: `decision "deny"`}},
		{"JSON cut at the cap", claudecode.PreToolUse, bash, claudecode.Reply{Stdout: []byte(`{"systemMessage":"aaaa`), StdoutCut: 5000},
			want{err: interceptors.ErrBadReply, errText: "cut at the output cap (5000 more bytes left out)"}},
		{"text cut at the cap is said to be", claudecode.UserPromptSubmit, intake, claudecode.Reply{Stdout: []byte("context"), StdoutCut: 10},
			want{kind: interceptors.Modify, check: func(t *testing.T, d *interceptors.Decision) {
				if p := payloadOf[events.Intake](t, d.Data); !strings.HasSuffix(p.Prompt, "context\n(hook output cut: 10 more bytes were left out)") {
					t.Fatalf("prompt %q", p.Prompt)
				}
			}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := tc.ev(t)
			d, err := claudecode.Decide(tc.event, ev, tc.reply)
			if tc.want.err != nil {
				if !errors.Is(err, tc.want.err) || !strings.Contains(err.Error(), tc.want.errText) {
					t.Fatalf("error %v; want %v saying %q", err, tc.want.err, tc.want.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d == nil {
				d = &interceptors.Decision{Kind: interceptors.Allow}
			}
			if d.Kind != tc.want.kind || d.Reason != tc.want.reason || d.Context != tc.want.context || !slices.Equal(d.Warnings, tc.want.warnings) {
				t.Fatalf("decision %+v; want %+v", d, tc.want)
			}
			if err := d.Validate(ev.Stage); err != nil {
				t.Fatalf("the stage refuses the decision: %v", err)
			}
			if tc.want.check != nil {
				tc.want.check(t, d)
			}
		})
	}
}

// On observe-only events nothing a hook answers is a decision.
func TestDecideObserveOnly(t *testing.T) {
	ev := event(t, events.StageToolFailed, "Bash", events.ToolFailed{Call: events.ToolCall{ID: "c", Name: "Bash"}, Error: "x"})
	for _, r := range []claudecode.Reply{
		{ExitCode: 2, Stderr: []byte("block!")},
		{Stdout: []byte(`{"decision":"block","reason":"x","continue":false}`)},
		{Stdout: []byte(`{"hookSpecificOutput":{"hookEventName":"PostToolUseFailure","additionalContext":"retry with -v"}}`)},
	} {
		if d, err := claudecode.Decide(claudecode.PostToolUseFailure, ev, r); d != nil || err != nil {
			t.Errorf("%+v: decision %+v, err %v", r, d, err)
		}
	}
	if _, err := claudecode.Decide(claudecode.PostToolUseFailure, ev, claudecode.Reply{Stdout: []byte("{oops")}); !errors.Is(err, interceptors.ErrBadReply) {
		t.Errorf("malformed output on an observe-only event: %v", err)
	}
	if _, err := claudecode.Decide(claudecode.PreToolUse, ev, claudecode.Reply{}); !errors.Is(err, claudecode.ErrUnmapped) {
		t.Errorf("PreToolUse on tool.failed: %v", err)
	}
}
