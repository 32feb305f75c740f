package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// denyRm is a remote interceptor: it denies Bash commands with rm -rf.
func denyRm(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
	var p events.ToolBefore
	if err := req.Event.DecodeData(&p); err != nil {
		return nil, err
	}
	if strings.Contains(string(p.Call.Arguments), "rm -rf") {
		return &interceptors.Decision{Kind: interceptors.Deny, Reason: "no rm -rf here"}, nil
	}
	return nil, nil
}

// startBusWithGuard starts a server other processes reach, registers
// denyRm on tool.before in its registry and serves it; it returns the
// server's URL and the bus.
func startBusWithGuard(t *testing.T) (string, *bus.Bus) {
	t.Helper()
	srv, nc := bustest.Start(t, bustest.WithListener())
	b := bustest.Provision(t, nc)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := remote.NewRegistry(b).Put(ctx, interceptors.Registration{Plugin: "guard", Stage: events.StageToolBefore, Tools: "Bash"}); err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Serve(ctx, nc, remote.ServeConfig{Plugin: "guard", Stages: []events.Stage{events.StageToolBefore}}, interceptors.Func(denyRm)); err != nil {
		t.Fatal(err)
	}
	return srv.ClientURL(), b
}

func hookInput(session, event, fields string) string {
	return fmt.Sprintf(`{"session_id": %q, "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp", "hook_event_name": %q%s}`, session, event, fields)
}

const rmInput = `, "tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": {"command": "rm -rf /"}`

// claudeHook runs loop claude-hook with stdin and returns its exit code,
// stdout and stderr.
func claudeHook(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"claude-hook"}, args...), strings.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// loop claude-hook records the event, runs the registry's interceptor and
// answers in Claude Code's format.
func TestClaudeHook(t *testing.T) {
	url, b := startBusWithGuard(t)
	code, stdout, stderr := claudeHook(t, hookInput("cc-1", "PreToolUse", rmInput), "--nats", url)
	var out struct {
		Spec struct {
			Decision string `json:"permissionDecision"`
			Reason   string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	if code != exitOK || json.Unmarshal([]byte(stdout), &out) != nil || out.Spec.Decision != "deny" || !strings.Contains(out.Spec.Reason, "no rm -rf here") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	evs, err := b.SessionEvents(context.Background(), "claude-code", "cc-1")
	if err != nil {
		t.Fatal(err)
	}
	var stages []string
	for _, e := range evs {
		stages = append(stages, string(e.Stage))
	}
	if got := strings.Join(stages, " "); got != "run.started hook.decided tool.before" {
		t.Fatalf("session: %s", got)
	}

	// Events hookbus records as nothing answer {} and record nothing.
	code, stdout, _ = claudeHook(t, hookInput("cc-1", "Notification", `, "message": "hi"`), "--nats", url, "--agent", "other")
	if code != exitOK || strings.TrimSpace(stdout) != "{}" {
		t.Fatalf("Notification: exit %d %s", code, stdout)
	}

	// Input that cannot be read: a non-blocking error (exit 1), or a
	// block (exit 2) with --policy fail; nothing on stdout.
	for policy, want := range map[string]int{"ignore": exitFailure, "fail": exitUsage} {
		code, stdout, stderr = claudeHook(t, `{"session_id": "x"`, "--nats", url, "--policy", policy)
		if code != want || stdout != "" || !strings.Contains(stderr, "bad hook input") {
			t.Fatalf("bad input, policy %s: exit %d\nstdout %s\nstderr %s", policy, code, stdout, stderr)
		}
	}
	code, _, stderr = claudeHook(t, "{}", "--policy", "maybe")
	if code != exitUsage || !strings.Contains(stderr, `--policy "maybe"`) {
		t.Fatalf("bad policy: exit %d %s", code, stderr)
	}
}

// NATS unreachable or hanging: loop claude-hook answers by the policy
// within its timeout.
func TestClaudeHookOutage(t *testing.T) {
	// A port nothing listens on, and a listener that accepts and never
	// speaks (a server that hangs).
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "nats://" + closed.Addr().String()
	closed.Close()
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	go func() {
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	for _, url := range []string{down, "nats://" + hang.Addr().String()} {
		for policy, want := range map[string]string{
			"ignore": `{"systemMessage":"hookbus could not record or check this PreToolUse event`,
			"fail":   `"permissionDecision":"deny"`,
		} {
			// The hanging server never answers: the command returns only
			// because its deadline does.
			code, stdout, stderr := claudeHook(t, hookInput("cc-2", "PreToolUse", rmInput), "--nats", url, "--policy", policy, "--timeout", "1s")
			if code != exitOK || !strings.Contains(stdout, want) {
				t.Fatalf("%s, policy %s: exit %d\nstdout %s\nstderr %s", url, policy, code, stdout, stderr)
			}
		}
	}
}
