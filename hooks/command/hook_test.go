package command_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/hooks/command"
	"github.com/hookbus/hookbus/interceptors"
)

// script writes an executable script into dir.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func toolBefore(t *testing.T, tool, args string) *events.Event {
	t.Helper()
	ev, err := events.New(events.StageToolBefore, events.Meta{Source: "t", AgentID: "coder", SessionID: "s1", RunID: "r1", Step: 1, Subject: tool},
		events.ToolBefore{Call: events.ToolCall{ID: "toolu_1", Name: tool, Arguments: json.RawMessage(args)}})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func newHook(t *testing.T, cfg command.Config, event claudecode.HookEvent, handler string) *command.Hook {
	t.Helper()
	h, err := command.New(cfg, event, json.RawMessage(handler))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func intercept(t *testing.T, h interceptors.Interceptor, ev *events.Event, timeout time.Duration) (*interceptors.Decision, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	dl, _ := ctx.Deadline()
	return h.Intercept(ctx, &interceptors.Request{Stage: ev.Stage, Event: ev, Registration: interceptors.Registration{Plugin: "p", Stage: ev.Stage}, Deadline: dl})
}

// TestExitCodes is the table over what a command hook does: its exit
// status, its output, a missing script.
func TestExitCodes(t *testing.T) {
	root := t.TempDir()
	cfg := command.Config{Root: root, MaxOutput: 4096, KillGrace: 200 * time.Millisecond}
	for _, tc := range []struct {
		name    string
		command string
		kind    interceptors.Kind
		reason  string
		err     error
		errText string
	}{
		{"exit 0 silent", "exit 0", interceptors.Allow, "", nil, ""},
		{"exit 0 text", "echo all good", interceptors.Allow, "", nil, ""},
		{"exit 0 JSON deny", `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"not on Fridays"}}'`, interceptors.Deny, "not on Fridays", nil, ""},
		{"exit 0 JSON ask", `printf '%s' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask"}}'`, interceptors.Ask, "", nil, ""},
		{"exit 0 JSON stop", `echo '{"continue":false,"stopReason":"halt"}'`, interceptors.Stop, "halt", nil, ""},
		{"exit 2 blocks with stderr", "echo 'rm -rf is blocked' >&2; echo ignored; exit 2", interceptors.Deny, "rm -rf is blocked", nil, ""},
		{"exit 1 non-blocking", "echo 'jq missing' >&2; exit 1", "", "", claudecode.ErrHookExit, "exit status 1 (Claude Code's non-blocking error): jq missing"},
		{"exit 3 non-blocking", "exit 3", "", "", claudecode.ErrHookExit, "exit status 3"},
		{"missing script", "./no-such-hook.sh", "", "", claudecode.ErrHookExit, "exit status 127"},
		{"malformed JSON", `echo '{"decision": "block", "reason": '`, "", "", interceptors.ErrBadReply, "not Claude Code's JSON output"},
		{"huge JSON is cut and refused", `printf '{"systemMessage":"'; head -c 100000 /dev/zero | tr '\0' a; printf '"}'`, "", "", interceptors.ErrBadReply, "cut at the output cap (95924 more bytes left out)"},
		{"huge text is cut", `head -c 100000 /dev/zero | tr '\0' a`, interceptors.Allow, "", nil, ""},
		{"huge stderr reason is cut", `head -c 10000 /dev/zero | tr '\0' b >&2; exit 2`, interceptors.Deny, strings.Repeat("b", 4096), nil, ""},
		{"killed by a signal", "kill -9 $$", "", "", claudecode.ErrHookExit, "exit status 137"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHook(t, cfg, claudecode.PreToolUse, fmt.Sprintf(`{"type":"command","command":%q}`, tc.command))
			d, err := intercept(t, h, toolBefore(t, "Bash", `{"command":"rm -rf /"}`), 10*time.Second)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("error %v; want %v saying %q", err, tc.err, tc.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d == nil {
				d = &interceptors.Decision{Kind: interceptors.Allow}
			}
			if d.Kind != tc.kind || d.Reason != tc.reason {
				t.Fatalf("decision %s %.60q; want %s %.60q", d.Kind, d.Reason, tc.kind, tc.reason)
			}
		})
	}
}

// A hook reads Claude Code's input on stdin, runs in the root with
// CLAUDE_PROJECT_DIR set, and gets none of the worker's secrets.
func TestInputAndEnvironment(t *testing.T) {
	root := t.TempDir()
	t.Setenv("HOOKBUS_TEST_SECRET", "s3cr3t")
	out := filepath.Join(root, "seen")
	h := newHook(t, command.Config{Root: root, Env: []string{"GREETING=hi"}}, claudecode.PreToolUse, fmt.Sprintf(`{"type":"command",
		"command":"cat > %[1]s.json; pwd > %[1]s.pwd; echo \"$CLAUDE_PROJECT_DIR|$GREETING|${HOOKBUS_TEST_SECRET:-none}\" > %[1]s.env"}`, out))
	if _, err := intercept(t, h, toolBefore(t, "Bash", `{"command":"ls"}`), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	var in map[string]any
	b, err := os.ReadFile(out + ".json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(root)
	if in["hook_event_name"] != "PreToolUse" || in["tool_name"] != "Bash" || in["cwd"] != abs || in["session_id"] != "s1" ||
		in["tool_input"].(map[string]any)["command"] != "ls" || in["tool_use_id"] != "toolu_1" {
		t.Fatalf("stdin %s", b)
	}
	if pwd, _ := os.ReadFile(out + ".pwd"); strings.TrimSpace(string(pwd)) != abs {
		t.Fatalf("ran in %s, want %s", pwd, abs)
	}
	if env, _ := os.ReadFile(out + ".env"); strings.TrimSpace(string(env)) != abs+"|hi|none" {
		t.Fatalf("environment %q", env)
	}
}

// The exec form runs a program with arguments and no shell.
func TestExecForm(t *testing.T) {
	root := t.TempDir()
	script(t, root, "deny.sh", `echo "denied: $1 $2" >&2; exit 2`)
	h := newHook(t, command.Config{Root: root}, claudecode.PreToolUse, `{"type":"command","command":"./deny.sh","args":["a b","$HOME"]}`)
	d, err := intercept(t, h, toolBefore(t, "Bash", `{}`), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if d.Kind != interceptors.Deny || d.Reason != "denied: a b $HOME" {
		t.Fatalf("decision %+v", d)
	}
	h = newHook(t, command.Config{Root: root}, claudecode.PreToolUse, `{"type":"command","command":"./absent","args":[]}`)
	if _, err := intercept(t, h, toolBefore(t, "Bash", `{}`), 10*time.Second); !errors.Is(err, command.ErrStart) {
		t.Fatalf("missing program: %v", err)
	}
}

func TestNewErrors(t *testing.T) {
	root := t.TempDir()
	for _, tc := range []struct {
		cfg     command.Config
		handler string
		err     string
	}{
		{command.Config{}, `{"type":"command","command":"x"}`, "no Root"},
		{command.Config{Root: filepath.Join(root, "nope")}, `{"type":"command","command":"x"}`, "is not a directory"},
		{command.Config{Root: root}, `{"type":"command"}`, "has no command"},
		{command.Config{Root: root}, `{"type":"command","command":"x","if":"Bash(git *)"}`, `unknown field "if"`},
		{command.Config{Root: root}, `{"type":"http","url":"x"}`, `unknown field "url"`},
		{command.Config{Root: root, Env: []string{"1BAD=x"}}, `{"type":"command","command":"x"}`, `Env entry "1BAD=x"`},
	} {
		_, err := command.New(tc.cfg, claudecode.PreToolUse, json.RawMessage(tc.handler))
		if !errors.Is(err, command.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v; want ErrInvalidConfig saying %q", tc.handler, err, tc.err)
		}
	}
	if _, err := command.New(command.Config{Root: root}, "PreToolUze", json.RawMessage(`{"type":"command","command":"x"}`)); !errors.Is(err, command.ErrInvalidConfig) {
		t.Errorf("unknown event: %v", err)
	}
}

// An async hook runs in the background: the chain does not wait, and what
// it answers changes nothing.
func TestAsync(t *testing.T) {
	root := t.TempDir()
	h := newHook(t, command.Config{Root: root}, claudecode.PreToolUse,
		`{"type":"command","async":true,"command":"cat > seen.json; echo 'blocked' >&2; exit 2"}`)
	d, err := intercept(t, h, toolBefore(t, "Bash", `{}`), 10*time.Second)
	if d != nil || err != nil {
		t.Fatalf("async hook decided %+v, %v", d, err)
	}
	h.Wait()
	if b, err := os.ReadFile(filepath.Join(root, "seen.json")); err != nil || !strings.Contains(string(b), `"hook_event_name":"PreToolUse"`) {
		t.Fatalf("the async hook did not run: %q %v", b, err)
	}
}
