package e2e

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/internal/fakellm"
)

// Each coding agent's CLI with hookbus as its hook backend (loop
// agent-hook for every event), in one session: the guard, a remote
// interceptor, rewrites the model's touch original.txt (the CLI runs touch
// rewritten.txt, not the model's command), then denies its rm -rf; the
// directory survives, the CLI tells the model the guard's reason, and the
// session is in the stream under the CLI's own session id.
func TestAgentHookRewritesAndDenies(t *testing.T) {
	for _, h := range harnesses {
		t.Run(h.name, func(t *testing.T) {
			h.lookPath(t)
			url, _ := startBus(t)
			victim := func(project string) { writeFile(t, filepath.Join(project, "victim", "keep.txt"), "keep me\n") }
			out := h.run(t, h.hookCommand(t, url), victim, "Create original.txt, then remove the victim directory.", runOpts{},
				h.turn(fakellm.Text("Creating it."), h.shell("call_01Touch", "touch original.txt")),
				h.turn(fakellm.Text("Removing it."), h.shell("call_01Deny", "rm -rf victim")),
				h.turn(fakellm.Text("The hook refused: I left victim alone.")))
			if _, err := os.Stat(filepath.Join(out.project, "rewritten.txt")); err != nil {
				t.Fatalf("the rewritten command did not run: %v (the model was told %s)", err, h.toolOutput(t, out.reqs, "call_01Touch"))
			}
			if _, err := os.Stat(filepath.Join(out.project, "original.txt")); err == nil {
				t.Fatal("the model's command ran")
			}
			if _, err := os.Stat(filepath.Join(out.project, "victim", "keep.txt")); err != nil {
				t.Fatalf("the rm -rf ran: %v", err)
			}
			if got := h.toolOutput(t, out.reqs, "call_01Deny"); !strings.Contains(got, denyReason) {
				t.Fatalf("the model was told %s, not the guard's reason", got)
			}
			replay := h.replay(t, url, out.session)
			for _, want := range []string{"tool.before", "hook.decided", "rewritten.txt", "tool.after", denyReason} {
				if !strings.Contains(replay, want) {
					t.Fatalf("observer replay of session %s lacks %q:\n%s", out.session, want, replay)
				}
			}
		})
	}
}

// Claude Code asks for permission to run a command it was not allowed up
// front; hookbus records the request as an approval, and Claude Code waits
// until a person answers it with observer approve: then it runs the
// command.
func TestClaudeCodePermissionApproved(t *testing.T) {
	h := claude
	h.lookPath(t)
	url, _ := startBus(t)
	bin := binaries(t)
	cmd, r, fake := h.start(t, h.hookCommand(t, url), nil, "Create approved.txt.", runOpts{ask: true},
		h.turn(h.shell("call_01Ask", "touch approved.txt")),
		h.turn(fakellm.Text("Done.")))
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var waiting string
	bustest.Eventuallyf(t, 60*time.Second, func() bool {
		select {
		case err := <-exited:
			t.Fatalf("claude ended before its permission request was answered (%v)\nstdout %s\nstderr %s", err, r.stdout, r.stderr)
		default:
		}
		code, stdout, _ := run(t, bin, "observer", "", "approvals", "--nats", url, "--agent", h.agent)
		waiting = waitingRun(stdout)
		return code == 0 && waiting != ""
	}, "an approval waiting for Claude Code's PermissionRequest")
	if _, err := os.Stat(filepath.Join(r.project, "approved.txt")); err == nil {
		t.Fatal("the command ran before it was approved")
	}
	code, stdout, stderr := run(t, bin, "observer", "", "approve", "--nats", url, "--note", "e2e", waiting)
	if code != 0 {
		t.Fatalf("observer approve %s: exit %d\nstdout %s\nstderr %s", waiting, code, stdout, stderr)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("claude: %v\nstdout %s\nstderr %s", err, r.stdout, r.stderr)
		}
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("claude still waited 2m after the approval\nstdout %s\nstderr %s", r.stdout, r.stderr)
	}
	out := r.outcome(t, h, fake)
	if _, err := os.Stat(filepath.Join(out.project, "approved.txt")); err != nil {
		t.Fatalf("the approved command did not run: %v (the model was told %s)", err, h.toolOutput(t, out.reqs, "call_01Ask"))
	}
	replay := h.replay(t, url, out.session)
	for _, want := range []string{"approval.requested", "approval.resolved"} {
		if !strings.Contains(replay, want) {
			t.Fatalf("observer replay of session %s lacks %q:\n%s", out.session, want, replay)
		}
	}
}

// waitingRun is the run of the first approval observer approvals lists as
// waiting, "" when none is.
func waitingRun(table string) string {
	sc := bufio.NewScanner(strings.NewReader(table))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 0 && f[0] != "RUN" && strings.HasSuffix(sc.Text(), "waiting") {
			return f[0]
		}
	}
	return ""
}

// replay is observer replay of the harness's agent's session: every event
// the session recorded, or the test fails.
func (h *harness) replay(t *testing.T, natsURL, session string) string {
	t.Helper()
	code, stdout, stderr := run(t, binaries(t), "observer", "", "replay", "--nats", natsURL, "--agent", h.agent, "--session", session)
	if code != 0 || strings.TrimSpace(stdout) == "" {
		t.Fatalf("observer replay --agent %s --session %s: exit %d\nstdout %s\nstderr %s", h.agent, session, code, stdout, stderr)
	}
	return stdout
}
