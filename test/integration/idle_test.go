package integration

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
)

// agentHookProc runs loop agent-hook as a coding agent's hook runs it:
// one process, the hook input on stdin.
func agentHookProc(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "loop"), append([]string{"agent-hook"}, args...)...)
	cmd.Dir = t.TempDir()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// A coding agent's session whose hooks never record its end is closed as
// idle once silent for longer than --close-idle, by exactly one of the two
// closers sweeping the bus (loop server's and loop close-idle), and verify
// then counts its run as ended.
func TestIdleSessionClosed(t *testing.T) {
	addr := freeAddr(t)
	url := "nats://" + addr
	_, srvOut := start(t, "loop", "server", "--store", filepath.Join(t.TempDir(), "store"), "--listen", addr, "--close-idle", "2s")
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(srvOut.String(), "listening on "+url) }, "loop server: %s", srvOut)
	_, closerOut := start(t, "loop", "close-idle", "--nats", url, "--close-idle", "2s")
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(closerOut.String(), "closing coding-agent sessions") }, "loop close-idle: %s", closerOut)

	// Gemini CLI hooked only on its tool events: the session never ends by itself.
	ls := `{"session_id": "g-idle", "transcript_path": "/tmp/t.json", "cwd": "/tmp", "hook_event_name": "BeforeTool", "timestamp": "2026-01-01T00:00:00Z", "tool_name": "Bash", "tool_input": {"command": "ls"}}`
	if r := agentHookProc(t, ls, "--harness", "gemini", "--nats", url); r.code != 0 {
		t.Fatalf("agent-hook: %d %s %s", r.code, r.stdout, r.stderr)
	}
	ends := func() []events.RunCompleted {
		rep := run(t, "observer", "replay", "--nats", url, "--agent", "gemini-cli", "--session", "g-idle", "--stage", "run.completed", "--json")
		return payloads[events.RunCompleted](t, jsonEvents(t, rep.stdout), events.StageRunCompleted)
	}
	waitFor(t, 30*time.Second, func() bool { return len(ends()) > 0 }, "the idle session to be closed")
	if e := ends(); len(e) != 1 || e[0].Reason != events.ReasonIdle || !strings.Contains(e[0].Detail, "Gemini CLI") {
		t.Fatalf("ends %+v, want one run.completed idle", e)
	}
	v := run(t, "observer", "verify", "--nats", url, "--session", "g-idle")
	if v.code != 0 || strings.Contains(v.stdout, "no end yet") {
		t.Fatalf("observer verify: %d\n%s\n%s", v.code, v.stdout, v.stderr)
	}
}
