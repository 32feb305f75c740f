package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/embedded"
	"github.com/hookbus/hookbus/events"
)

// approvalAgents writes an agent file whose calculator calls wait for a
// human (expiring after expiry, resolving by onExpiry).
func approvalAgents(t *testing.T, expiry, onExpiry string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agents.yaml")
	file := "agents:\n  - id: ops\n    model: scripted:demo\n    tools: [clock, calculator]\n    approval:\n      tools: [{tool: calculator}]\n      expiry: " + expiry + "\n      on_expiry: " + onExpiry + "\n"
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runEventsNamed replays a run's events through the bus.
func replayRun(t *testing.T, ctx context.Context, b *bus.Bus, runID string) []*events.Event {
	t.Helper()
	var out []*events.Event
	if _, err := b.Replay(ctx, bus.Filter{Run: runID}, func(e *events.Event) error { out = append(out, e); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func stageCount(evs []*events.Event, st events.Stage) int {
	n := 0
	for _, e := range evs {
		if e.Stage == st {
			n++
		}
	}
	return n
}

// An approval answered from another process after every worker stopped and
// the server restarted: the answer is recorded at once, in the run's record
// (the run's id given as the short prefix the run lists show); a second
// answer to the same call is refused at once, naming the first; a worker
// started later resumes the run from the recorded answer, and the approved
// tool runs once.
func TestApprovalSurvivesWorkersAndServerStopping(t *testing.T) {
	ctx := testCtx(t, 3*time.Minute)
	addr, store := freeAddr(t), t.TempDir()
	startServer := func() *embedded.Server {
		t.Helper()
		srv, err := embedded.Start(ctx, embedded.Config{StoreDir: store, Listen: addr})
		if err != nil {
			t.Fatalf("start the server: %v", err)
		}
		t.Cleanup(srv.Shutdown)
		return srv
	}
	srv := startServer()
	url := "nats://" + addr
	agents := approvalAgents(t, "1h", "deny")
	worker, out := start(t, "loop", "serve", "--nats", url, "--agents", agents)
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(out.String(), "taking runs") }, "the worker to start:\n%s", out)

	sub := run(t, "loop", "submit", "--nats", url, "--agent", "ops", "--session", "s1", "what is 6*7?")
	if sub.code != 0 {
		t.Fatalf("submit: %d %s", sub.code, sub.stderr)
	}
	runID := strings.TrimSpace(sub.stdout)
	admin := newBus(t, connect(t, url))
	waitFor(t, 30*time.Second, func() bool {
		return stageCount(replayRun(t, ctx, admin, runID), events.StageApprovalRequested) == 1
	}, "the run to ask for approval")
	pending := run(t, "observer", "approvals", "--nats", url)
	if pending.code != 0 || !strings.Contains(pending.stdout, runID) || !strings.Contains(pending.stdout, "calculator") {
		t.Fatalf("observer approvals: %d\n%s\n%s", pending.code, pending.stdout, pending.stderr)
	}

	// Every worker stops; the server restarts on its store.
	if err := worker.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = worker.Wait()
	srv.Shutdown()
	startServer()

	short := runID[:12] // as observer runs and the web page show it
	ok := run(t, "observer", "approve", short, "--nats", url, "--by", "alice")
	if ok.code != 0 || !strings.Contains(ok.stdout, "approve call call_1_2 of run "+runID+": recorded, by anonymous (cli) [note: declared \"alice\"]") ||
		!strings.Contains(ok.stdout, "a worker (loop serve) resumes it, now or when one starts") {
		t.Fatalf("observer approve with no worker: %d\n%s\n%s", ok.code, ok.stdout, ok.stderr)
	}
	// A second answer to the same call, another's reject: refused at once,
	// naming the first, with no worker running.
	dup := run(t, "observer", "reject", runID, "--nats", url, "--reason", "no")
	if dup.code == 0 || !strings.Contains(dup.stderr, "answered already: approve by anonymous (cli)") {
		t.Fatalf("second answer: %d %s %s", dup.code, dup.stdout, dup.stderr)
	}
	if all := run(t, "observer", "approvals", "--all", short, "--nats", url); all.code != 0 || !strings.Contains(all.stdout, "approve by anonymous (cli)") {
		t.Fatalf("observer approvals --all RUN: %d\n%s\n%s", all.code, all.stdout, all.stderr)
	}

	// A worker started later finishes the run.
	_, out2 := start(t, "loop", "serve", "--nats", url, "--agents", agents)
	admin2 := newBus(t, connect(t, url))
	var evs []*events.Event
	waitFor(t, 60*time.Second, func() bool {
		evs = replayRun(t, ctx, admin2, runID)
		return stageCount(evs, events.StageRunCompleted) == 1
	}, "the run to finish after the answer; worker:\n%s", out2)
	var resolved []events.ApprovalResolved
	calc := 0
	for _, e := range evs {
		switch e.Stage {
		case events.StageApprovalResolved:
			var p events.ApprovalResolved
			mustDecode(t, e, &p)
			resolved = append(resolved, p)
		case events.StageToolAfter:
			var p events.ToolAfter
			mustDecode(t, e, &p)
			if p.Call.Name == "calculator" {
				calc++
				if p.Result.Content != "42" {
					t.Fatalf("calculator result %+v", p.Result)
				}
			}
		}
	}
	if len(resolved) != 1 || resolved[0].Action != events.ActionApprove || resolved[0].DeclaredBy != "alice" || resolved[0].Identity != events.IdentityAnonymous {
		t.Fatalf("approval.resolved %+v; want the first answer only, alice only as a note", resolved)
	}
	if calc != 1 || stageCount(evs, events.StageToolFailed) != 0 {
		t.Fatalf("calculator finished %d times, %d tool.failed; want once", calc, stageCount(evs, events.StageToolFailed))
	}
	var rc events.RunCompleted
	mustDecode(t, evs[len(evs)-1], &rc)
	if rc.Reason != events.ReasonDone || !strings.Contains(rc.Answer, "6*7 = 42") {
		t.Fatalf("run.completed %+v", rc)
	}
	// Answering again from the CLI is refused before anything is sent.
	again := run(t, "observer", "approve", runID, "--nats", url, "--call", "call_1_2")
	if again.code == 0 || !strings.Contains(again.stderr, "has ended") {
		t.Fatalf("observer approve of an answered call: %d %s", again.code, again.stderr)
	}
	// Nothing waits any more.
	if p := run(t, "observer", "approvals", "--nats", url); p.code != 0 || strings.Contains(p.stdout, runID) {
		t.Fatalf("observer approvals after the answer: %d\n%s", p.code, p.stdout)
	}
}

// An approval nobody answers resolves at its expiry by the agent's policy,
// through the wake-up the waiting run scheduled (a JetStream message
// schedule in the wakes stream): the worker records it and the run goes on.
func TestApprovalExpiresThroughItsScheduledWakeUp(t *testing.T) {
	ctx := testCtx(t, 2*time.Minute)
	addr := freeAddr(t)
	url := "nats://" + addr
	_, out := start(t, "loop", "serve", "--store", filepath.Join(t.TempDir(), "store"), "--listen", addr, "--agents", approvalAgents(t, "2s", "deny"))
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(out.String(), "taking runs") }, "the worker to start:\n%s", out)
	sub := run(t, "loop", "submit", "--nats", url, "--agent", "ops", "--wait", "--timeout", "60s", "what is 6*7?")
	if sub.code != 0 {
		t.Fatalf("submit --wait: %d\n%s\n%s\nworker:\n%s", sub.code, sub.stdout, sub.stderr, out)
	}
	admin := newBus(t, connect(t, url))
	var res events.ApprovalResolved
	for _, e := range replayRun(t, ctx, admin, runIDFrom(t, sub.stderr)) {
		if e.Stage == events.StageApprovalResolved {
			mustDecode(t, e, &res)
		}
	}
	if !res.Expired || res.By != "hookbus" || res.Action != events.ActionRejectAndContinue || res.Channel != events.ChannelExpiry {
		t.Fatalf("approval.resolved %+v, want it expired, denied", res)
	}
	if !strings.Contains(sub.stdout, "6*7 = rejected by hookbus") {
		t.Fatalf("answer %q: the model should have been told the call was denied", sub.stdout)
	}
}

// runIDFrom reads the run id from loop submit's stderr.
func runIDFrom(t *testing.T, stderr string) string {
	t.Helper()
	for _, f := range strings.Fields(stderr) {
		if len(f) == 26 && events.ValidateULID("run", f) == nil {
			return f
		}
	}
	t.Fatalf("no run id in %q", stderr)
	return ""
}
