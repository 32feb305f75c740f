package integration

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/history"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/policy"
)

// A rate limit per agent (two shell calls an hour) shared by two loop serve
// workers: the first call is let through by one worker, the second by the
// other, the third is denied by the second, and a worker restarted since
// (a new process: nothing cached) denies the fourth. Refused calls are not
// counted: the counter holds the two let through.
func TestPolicyCounterSharedByWorkers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	srv := startNATS(t)
	b := adminBus(t, ctx, srv.url(), 1)
	file, err := filepath.Abs("testdata/shell-rate-limit.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if r := run(t, "observer", "policy", "apply", "-f", file, "--nats", srv.url()); r.code != 0 {
		t.Fatalf("observer policy apply: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	args := []string{"--nats", srv.url(), "--agent", "demo", "--concurrency", "1", "--tools", "Bash", "--root", t.TempDir(),
		"--script", toolScript(t, "Bash", map[string]any{"command": "echo counted"}), "--log-level", "info"}
	q := runs.New(b)
	call := func(n int, w *worker) {
		t.Helper()
		req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "run it"}
		if err := q.Submit(ctx, req); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if _, err := b.WaitRun(wctx, req.AgentID, req.SessionID, req.RunID); err != nil {
			t.Fatalf("call %d: %v\nworker:\n%s", n, err, w.stderr.String())
		}
	}
	denials := func() int { return len(hookDecidedPolicy(t, srv.url(), "demo", "s1")) }

	first := startWorker(t, args...)
	call(1, first)
	second := startWorker(t, args...)
	stop(t, first, time.Minute)
	call(2, second)
	if n := denials(); n != 0 {
		t.Fatalf("%d of the first two calls denied, want none", n)
	}
	call(3, second)
	hits := hookDecidedPolicy(t, srv.url(), "demo", "s1")
	if len(hits) != 1 || hits[0].Name != "shell-rate-limit" || hits[0].Rule != "rate" || hits[0].Message != "agent demo ran 2 shell commands in the last hour" {
		t.Fatalf("the third call's denials: %+v; want one by shell-rate-limit's rate", hits)
	}
	// The first worker starts again, the second stops: the restarted one
	// reads the count from the bus.
	restarted := startWorker(t, args...)
	stop(t, second, time.Minute)
	call(4, restarted)
	if n := denials(); n != 2 {
		t.Fatalf("%d calls denied after the restart, want 2 (the third and the fourth)\nrestarted worker:\n%s", n, restarted.stderr.String())
	}
	key := policy.CounterKey{Policy: "shell-rate-limit", Counter: "shell_per_agent", Key: "demo", Window: time.Hour}
	if v, err := history.New(b).Counter(ctx, key); err != nil || v != 2 {
		t.Fatalf("the counter = %v, %v; want the 2 calls let through", v, err)
	}
}
