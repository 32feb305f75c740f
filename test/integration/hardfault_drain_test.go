package integration

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
)

// A worker told to stop (SIGTERM, as a rolling deploy does) takes no new
// run and lets its runs in flight finish within --drain-timeout; those still
// running then are handed back to the queue unended, and a second worker
// resumes them without running a recorded tool again.

// slowCallCommand counts its execution in calls.log, sleeps secs seconds
// and prints its mark.
func slowCallCommand(secs int) string {
	return `m="$(date +%s%N)-$$"; echo "$m" >> calls.log; sleep ` + strconv.Itoa(secs) + `; echo "$m"`
}

// drainRun starts a nats-server process and a first worker (drain timeout
// drain) running a slow Bash call (secs seconds), submits a run, and
// returns once the call runs.
func drainRun(t *testing.T, ctx context.Context, secs int, drain time.Duration) (*toolRun, *worker, *events.RunRequest, mark) {
	t.Helper()
	r := newToolRun(t, ctx, slowCallCommand(secs))
	first := startWorker(t, append([]string{"--drain-timeout", drain.String()}, r.args...)...)
	req := r.submit(t, ctx, "slowtool")
	var marks []mark
	waitFor(t, time.Minute, func() bool {
		marks = readMarks(t, r.root)
		return len(marks) > 0
	}, "the tool to start\nworker:\n%s", lazy(first.stderr.String))
	// The shell leads its own process group: never leave it behind.
	_, pid, _ := strings.Cut(marks[0].text, "-")
	if pgid, err := strconv.Atoi(pid); err == nil {
		t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	}
	return r, first, req, marks[0]
}

// stop sends SIGTERM to w and waits for it to exit; it returns how long
// that took.
func stop(t *testing.T, w *worker, within time.Duration) time.Duration {
	t.Helper()
	began := time.Now()
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	res := w.wait(t, within)
	took := time.Since(began)
	if res.code != 0 {
		t.Fatalf("loop serve exited %d after SIGTERM:\n%s", res.code, res.stderr)
	}
	return took
}

// With a drain timeout longer than the call, the worker told to stop
// waits for its run: the run ends done on it, one attempt, the tool run
// once, and only then does the worker exit. A second worker started
// meanwhile does not take the run.
func TestFaultDrainLetsRunsFinish(t *testing.T) {
	hardFaults(t)
	ctx := testCtx(t, 5*time.Minute)
	r, first, req, m := drainRun(t, ctx, 4, time.Minute)
	second := startWorker(t, r.args...)
	took := stop(t, first, 2*time.Minute)
	t.Logf("the first worker drained in %v (the call ran %v before SIGTERM)", took.Round(100*time.Millisecond), time.Since(m.at).Round(100*time.Millisecond)-took)
	if !strings.Contains(first.stderr.String(), "loop serve: drained") {
		t.Fatalf("the worker did not say it drained:\n%s", first.stderr.String())
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := r.b.WaitRun(wctx, req.AgentID, req.SessionID, req.RunID); err != nil {
		t.Fatalf("waiting for the run: %v\nfirst worker:\n%s\nsecond worker:\n%s", err, first.stderr.String(), second.stderr.String())
	}
	evs := replayAll(t, r.srv.url())
	checkUniqueIDs(t, evs)
	run := byRun(evs)[req.RunID]
	rc := completed(t, checkRun(t, req.RunID, run))
	if rc.Reason != events.ReasonDone {
		t.Fatalf("run ended %s (%s), want done\n%s\nfirst worker:\n%s", rc.Reason, rc.Detail, seqStages(run), first.stderr.String())
	}
	if started := payloadsOf[events.RunStarted](t, run, events.StageRunStarted); len(started) != 1 {
		t.Fatalf("%d run.started, want the one attempt of the draining worker\n%s", len(started), seqStages(run))
	}
	if marks := readMarks(t, r.root); len(marks) != 1 || !strings.Contains(rc.Answer, marks[0].text) {
		t.Fatalf("calls.log %v, answer %q: want one execution, its result in the answer", marks, rc.Answer)
	}
}

// With a drain timeout shorter than the call, the worker told to stop
// hands the run back unended once the timeout passes and exits; a second
// worker resumes it and ends it done. The call cut short is not run again:
// its outcome is recorded unknown, as after a crash.
func TestFaultDrainHandsBackRunsStillRunning(t *testing.T) {
	hardFaults(t)
	ctx := testCtx(t, 5*time.Minute)
	r, first, req, _ := drainRun(t, ctx, 30, time.Second)
	took := stop(t, first, time.Minute)
	t.Logf("the first worker stopped %v after SIGTERM (drain timeout 1s)", took.Round(100*time.Millisecond))
	held := runEventsOf(ctx, r.b, req.RunID)
	if has(held, req.RunID, events.StageRunCompleted, 0) || has(held, req.RunID, events.StageRunFailed, 0) ||
		has(held, req.RunID, events.StageToolFailed, 0) || has(held, req.RunID, events.StageToolAfter, 0) {
		t.Fatalf("the stopped worker ended its run: %s; want it handed back unended\n%s", seqStages(held), first.stderr.String())
	}
	if !strings.Contains(first.stderr.String(), "handing them back") {
		t.Fatalf("the worker did not say it handed its run back:\n%s", first.stderr.String())
	}
	eff, rc := r.resume(t, ctx, req, time.Now())
	tb, ta := toolCounts(t, eff)
	failed := payloadsOf[events.ToolFailed](t, eff, events.StageToolFailed)
	if tb["call_1_1"] != 1 || ta["call_1_1"] != 1 || len(failed) != 1 || !failed[0].Unknown {
		t.Fatalf("tool events: %v tool.before, %v tool.after, tool.failed %+v; want the call cut short recorded unknown by the resumed attempt", tb, ta, failed)
	}
	if marks := readMarks(t, r.root); len(marks) != 1 {
		t.Fatalf("calls.log counts %d executions, want 1: %v", len(marks), marks)
	}
	if !strings.Contains(rc.Answer, "outcome unknown") {
		t.Fatalf("answer %q does not pass on the unknown outcome", rc.Answer)
	}
}

// slowModelScript writes a one-step script whose model takes ms to answer.
func slowModelScript(t *testing.T, ms int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "slow-model.json")
	if err := os.WriteFile(path, []byte(`[{"content": "A slow thought.", "delay_ms": `+strconv.Itoa(ms)+`}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A worker told to stop while its model thinks longer than the drain
// timeout hands the run back unended; a second worker resumes it (the
// model asked again: its first answer was never recorded) and ends it done.
func TestFaultDrainHandsBackRunsWaitingForTheModel(t *testing.T) {
	hardFaults(t)
	ctx := testCtx(t, 5*time.Minute)
	srv := startNATS(t)
	b := adminBus(t, ctx, srv.url(), 1)
	r := &toolRun{srv: srv, b: b, root: t.TempDir()}
	r.args = []string{"--nats", srv.url(), "--concurrency", "1", "--lease", "3s", "--script", slowModelScript(t, 6000), "--root", r.root, "-v", "--agent", toolAgents}
	first := startWorker(t, append([]string{"--drain-timeout", "1s"}, r.args...)...)
	req := r.submit(t, ctx, "slowtool")
	waitFor(t, time.Minute, func() bool {
		return has(runEventsOf(ctx, b, req.RunID), req.RunID, events.StageContextAssembled, 1)
	}, "the model to be asked\nworker:\n%s", lazy(first.stderr.String))
	took := stop(t, first, time.Minute)
	t.Logf("the first worker stopped %v after SIGTERM (drain timeout 1s)", took.Round(100*time.Millisecond))
	held := runEventsOf(ctx, b, req.RunID)
	if has(held, req.RunID, events.StageRunCompleted, 0) || has(held, req.RunID, events.StageRunFailed, 0) || has(held, req.RunID, events.StageModelResponded, 1) {
		t.Fatalf("the stopped worker ended its run or recorded an answer: %s; want it handed back unended\n%s", seqStages(held), first.stderr.String())
	}
	eff, rc := r.resume(t, ctx, req, time.Now())
	if n := len(payloadsOf[events.ModelResponded](t, eff, events.StageModelResponded)); n != 1 || rc.Answer != "A slow thought." {
		t.Fatalf("%d model.responded, answer %q; want the resumed attempt's one answer\n%s", n, rc.Answer, seqStages(eff))
	}
}

// A second SIGTERM during the drain stops the worker at once: its run in
// flight is not handed back but ended, recorded as interrupted, its call
// under way with its outcome unknown.
func TestFaultDrainSecondSignalInterrupts(t *testing.T) {
	hardFaults(t)
	ctx := testCtx(t, 5*time.Minute)
	r, first, req, _ := drainRun(t, ctx, 30, time.Minute)
	if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(first.stderr.String(), "loop serve: draining") }, "the worker to drain:\n%s", lazy(first.stderr.String))
	took := stop(t, first, 30*time.Second)
	t.Logf("the worker stopped %v after the second SIGTERM (drain timeout 1m)", took.Round(100*time.Millisecond))
	run := runEventsOf(ctx, r.b, req.RunID)
	rc := completed(t, checkRun(t, req.RunID, run))
	failed := payloadsOf[events.ToolFailed](t, run, events.StageToolFailed)
	if rc.Reason != events.ReasonInterrupted || len(failed) != 1 || !failed[0].Unknown {
		t.Fatalf("run ended %s (%s), tool.failed %+v; want interrupted, the call's outcome unknown\n%s", rc.Reason, rc.Detail, failed, seqStages(run))
	}
}
