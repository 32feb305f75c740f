package integration

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
)

// Under deploy/nats' users and permissions, with real processes: an answer
// records who gave it as the server authenticated the connection (the name
// typed with --by only as a note); a second answer, by another approver,
// is refused at once with no worker running; a worker started later
// resumes the run; show and verify find the identity bound to its writer;
// the loop user cannot disable a plugin, the admin can and is named.
func TestApprovalsUnderDeployedUsers(t *testing.T) {
	ctx := testCtx(t, 3*time.Minute)
	url := deployConf(t)
	admin, loopUser := url("admin", "admin-change-me"), url("loop", "loop-change-me")
	approver, alice, auditor := url("approver", "approver-change-me"), url("alice", "alice-change-me"), url("auditor", "auditor-change-me")
	if p := run(t, "observer", "provision", "--nats", admin); p.code != 0 {
		t.Fatalf("provision: %d %s", p.code, p.stderr)
	}
	agents := approvalAgents(t, "1h", "deny")
	worker, out := start(t, "loop", "serve", "--nats", loopUser, "--agents", agents)
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(out.String(), "taking runs") }, "the worker to start:\n%s", out)
	sub := run(t, "loop", "submit", "--nats", loopUser, "--agent", "ops", "--session", "s1", "what is 6*7?")
	if sub.code != 0 {
		t.Fatalf("submit: %d %s", sub.code, sub.stderr)
	}
	runID := strings.TrimSpace(sub.stdout)
	ab := newBus(t, connect(t, admin))
	waitFor(t, 30*time.Second, func() bool {
		return stageCount(replayRun(t, ctx, ab, runID), events.StageApprovalRequested) == 1
	}, "the run to ask for approval; worker:\n%s", out)
	if err := worker.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = worker.Wait()

	short := runID[:12]
	ok := run(t, "observer", "approve", short, "--nats", approver, "--by", "the-ciso")
	if ok.code != 0 || !strings.Contains(ok.stdout, `recorded, by approver (cli) [note: declared "the-ciso"]`) {
		t.Fatalf("approve as approver: %d\n%s\n%s", ok.code, ok.stdout, ok.stderr)
	}
	start2 := time.Now()
	dup := run(t, "observer", "reject", short, "--nats", alice, "--reason", "no")
	if dup.code == 0 || !strings.Contains(dup.stderr, `answered already: approve by approver (cli) [note: declared "the-ciso"] at `) {
		t.Fatalf("reject as alice after approver's approve: %d %s %s", dup.code, dup.stdout, dup.stderr)
	}
	t.Logf("the second answer was refused in %v", time.Since(start2).Round(time.Millisecond))

	_, out2 := start(t, "loop", "serve", "--nats", loopUser, "--agents", agents)
	waitFor(t, 60*time.Second, func() bool {
		return stageCount(replayRun(t, ctx, ab, runID), events.StageRunCompleted) == 1
	}, "a worker started later to resume the run; worker:\n%s", out2)

	show := run(t, "observer", "show", short, "--nats", auditor)
	if show.code != 0 || !strings.Contains(show.stdout, `→ approve by approver (cli) [note: declared "the-ciso"]`) || strings.Contains(show.stdout, "IDENTITY") {
		t.Fatalf("show as the auditor: %d\n%s\n%s", show.code, show.stdout, show.stderr)
	}
	if v := run(t, "observer", "verify", "--run", runID, "--nats", auditor, "--json"); strings.Contains(v.stdout, `"identity"`) {
		t.Fatalf("verify flags the answer's identity:\n%s\n%s", v.stdout, v.stderr)
	}

	if d := run(t, "observer", "hooks", "disable", "plugin-pii", "--nats", loopUser, "--by", "the-ciso"); d.code == 0 || !strings.Contains(d.stderr, "ermission") {
		t.Fatalf("hooks disable as the loop user: %d %s %s", d.code, d.stdout, d.stderr)
	}
	if d := run(t, "observer", "hooks", "disable", "plugin-pii", "--nats", admin, "--note", "on call", "--reason", "leaks"); d.code != 0 {
		t.Fatalf("hooks disable as admin: %d %s", d.code, d.stderr)
	}
	if l := run(t, "observer", "hooks", "list", "--nats", auditor); !strings.Contains(l.stdout, `disabled: plugin-pii by admin (cli) [note: declared "on call"] at `) {
		t.Fatalf("hooks list: %d\n%s\n%s", l.code, l.stdout, l.stderr)
	}
}
