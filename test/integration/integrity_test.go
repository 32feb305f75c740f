package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
)

// A run has one end, and a record nobody touched verifies: the tests below
// break a run the ways ordinary use does (a worker paused past its lease,
// two runs on one session at once, Ctrl-C mid-tool) with real processes,
// and check every run's record with observer verify.

// verifyOK runs observer verify over args (--nats URL or --store DIR) and
// fails t unless every run passes.
func verifyOK(t *testing.T, args ...string) string {
	t.Helper()
	v := run(t, "observer", append([]string{"verify"}, args...)...)
	if v.code != 0 || !strings.Contains(v.stderr, " 0 failed") {
		t.Fatalf("observer verify: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
	return v.stdout
}

// ends returns the terminal events of run among evs.
func ends(evs []*events.Event, run string) []*events.Event {
	var out []*events.Event
	for _, e := range evs {
		if e.RunID == run && (e.Stage == events.StageRunCompleted || e.Stage == events.StageRunFailed) {
			out = append(out, e)
		}
	}
	return out
}

// A worker is SIGSTOPped while a slow tool runs, longer than its lease:
// a second worker resumes the run and ends it (the tool's outcome
// unknown), and the session's next run claims the session. When the first
// worker wakes, its tool.after is refused; it reads the run's record, finds
// the run ended, and writes nothing: the run keeps one end, and every run
// verifies.
func TestPausedWorkerWritesNoSecondEnd(t *testing.T) {
	ctx := testCtx(t, 3*time.Minute)
	// The first call sleeps; later ones (the next run's) do not.
	r := newToolRun(t, ctx, `if [ ! -e slept ]; then touch slept; m="$(date +%s%N)-$$"; echo "$m" >> calls.log; sleep 5; fi; echo done`)
	first := startWorker(t, r.args...)
	req := r.submit(t, ctx, "paused")
	waitFor(t, time.Minute, func() bool { return len(readMarks(t, r.root)) > 0 }, "the tool to start\nworker:\n%s", lazy(first.stderr.String))
	if err := first.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	cont := func() { _ = first.cmd.Process.Signal(syscall.SIGCONT) }
	t.Cleanup(cont)

	second := startWorker(t, r.args...)
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := r.b.WaitRun(wctx, req.AgentID, req.SessionID, req.RunID); err != nil {
		t.Fatalf("the run was not resumed: %v\nsecond worker:\n%s", err, second.stderr.String())
	}
	next := r.submit(t, ctx, "paused")
	if _, err := r.b.WaitRun(wctx, next.AgentID, next.SessionID, next.RunID); err != nil {
		t.Fatalf("the session's next run: %v\nsecond worker:\n%s", err, second.stderr.String())
	}
	cont()
	t.Logf("first worker stopped for %v (lease 3s)", time.Since(stopped).Round(100*time.Millisecond))
	waitFor(t, time.Minute, func() bool { return strings.Contains(first.stderr.String(), "taken over") },
		"the first worker to find its run taken over\nfirst worker:\n%s", lazy(first.stderr.String))

	evs := replayAll(t, r.srv.url())
	checkUniqueIDs(t, evs)
	for _, id := range []string{req.RunID, next.RunID} {
		if got := ends(evs, id); len(got) != 1 {
			t.Fatalf("run %s has %d ends\n%s\nfirst worker:\n%s", id, len(got), seqStages(byRun(evs)[id]), first.stderr.String())
		}
		eff, _ := effectiveRun(byRun(evs)[id])
		checkRun(t, id, eff)
	}
	verifyOK(t, "--nats", r.srv.url())
}

// Two runs submitted at the same moment on one session, each taken by its
// own worker, both calling a tool: the later claim takes the session
// over; the run that loses it ends once, with run.failed naming the other,
// its call's outcome recorded (unknown when its tool ran), every event
// chained to the one stored before it. Several tries; observer verify
// passes every run.
func TestTwoRunsAtOnceOnOneSessionWithWorkers(t *testing.T) {
	ctx := testCtx(t, 3*time.Minute)
	r := newToolRun(t, ctx, `sleep 1; echo done`)
	w1, w2 := startWorker(t, r.args...), startWorker(t, r.args...)
	const tries = 3
	var taken, unknown int
	for try := range tries {
		session := fmt.Sprintf("at-once-%d", try)
		reqs := make([]*events.RunRequest, 2)
		for i := range reqs {
			reqs[i] = &events.RunRequest{RunID: events.NewID(), AgentID: "atonce", SessionID: session, Prompt: fmt.Sprintf("run %d", i)}
		}
		errs := make(chan error, 2)
		for _, req := range reqs {
			go func() { errs <- runs.New(r.b).Submit(ctx, req) }()
		}
		for range reqs {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		for _, req := range reqs {
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			_, err := r.b.WaitRun(wctx, req.AgentID, req.SessionID, req.RunID)
			cancel()
			if err != nil {
				t.Fatalf("try %d: run %s did not end: %v%s", try, req.RunID, err, workerLogs([]*worker{w1, w2}))
			}
		}
		evs := replayAll(t, r.srv.url())
		checkUniqueIDs(t, evs)
		runs := byRun(evs)
		for i, req := range reqs {
			eff, _ := effectiveRun(runs[req.RunID])
			end := checkRun(t, req.RunID, eff)
			if got := ends(evs, req.RunID); len(got) != 1 {
				t.Fatalf("try %d: run %s has %d ends\n%s", try, req.RunID, len(got), seqStages(eff))
			}
			before, after := toolCounts(t, eff)
			for id, n := range before {
				if n != 1 || after[id] != 1 {
					t.Fatalf("try %d: run %s call %s: %d tool.before, %d tool.after\n%s", try, req.RunID, id, n, after[id], seqStages(eff))
				}
			}
			if end == nil || end.Stage != events.StageRunFailed {
				continue
			}
			taken++
			var p events.RunFailed
			mustDecode(t, end, &p)
			if other := reqs[1-i].RunID; !strings.Contains(p.Error, "taken over by run "+other) {
				t.Fatalf("try %d: run %s failed %q; want it taken over by run %s", try, req.RunID, p.Error, other)
			}
			failed := payloadsOf[events.ToolFailed](t, eff, events.StageToolFailed)
			for _, f := range failed {
				if !f.Unknown {
					t.Fatalf("try %d: run %s: tool.failed %+v; want the outcome unknown", try, req.RunID, f)
				}
			}
			unknown += len(failed)
			if len(before) > 0 && len(failed) == 0 {
				t.Fatalf("try %d: run %s's tool ran but its outcome is not recorded\n%s", try, req.RunID, seqStages(eff))
			}
		}
	}
	t.Logf("%d tries: %d runs taken over by the other run of their session, %d calls recorded with an unknown outcome", tries, taken, unknown)
	verifyOK(t, "--nats", r.srv.url())
}

// loop run with a slow Bash command, interrupted (SIGINT as Ctrl-C, and
// SIGTERM): the run ends interrupted, the call's outcome recorded unknown;
// loop exits within seconds, and observer verify passes the run.
func TestLoopRunInterruptedMidTool(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			root := filepath.Join(dir, "root")
			if err := os.Mkdir(root, 0o755); err != nil {
				t.Fatal(err)
			}
			store := filepath.Join(dir, "store")
			p := startFaultProc(t, "loop", "run", "--listen", "none", "--store", store, "--script",
				oneCallScript(t, `m="$(date +%s%N)-$$"; echo "$m" >> calls.log; sleep 60`), "--tools", "Bash", "--root", root, "run it")
			waitFor(t, time.Minute, func() bool { return len(readMarks(t, root)) > 0 }, "the tool to start\n%s", lazy(p.stderr.String))
			if err := p.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			sent := time.Now()
			res := p.wait(t, 30*time.Second)
			t.Logf("loop run exited %d, %v after %s", res.code, time.Since(sent).Round(10*time.Millisecond), sig)
			if !strings.Contains(res.stderr, ": interrupted") {
				t.Fatalf("loop run: exit %d\n%s", res.code, res.stderr)
			}
			runID := loopRunID(t, res)
			rp := run(t, "observer", "replay", "--store", store, "--json")
			evs := jsonEvents(t, rp.stdout)
			eff, _ := effectiveRun(byRun(evs)[runID])
			rc := completed(t, checkRun(t, runID, eff))
			failed := payloadsOf[events.ToolFailed](t, eff, events.StageToolFailed)
			if rc.Reason != events.ReasonInterrupted || len(failed) != 1 || !failed[0].Unknown {
				t.Fatalf("run.completed %+v, tool.failed %+v; want interrupted, the call's outcome unknown\n%s", rc, failed, seqStages(eff))
			}
			verifyOK(t, "--store", store)
		})
	}
}

// loop serve told twice to stop (SIGTERM, and SIGINT) while a run's slow
// tool runs: the first signal starts the drain (the run would be handed
// back at its end: TestFaultDrain*), the second stops the worker at once;
// the run ends interrupted, its call's outcome recorded unknown; the worker
// exits within seconds, and observer verify passes the run.
func TestLoopServeInterruptedMidTool(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			ctx := testCtx(t, 2*time.Minute)
			r := newToolRun(t, ctx, `m="$(date +%s%N)-$$"; echo "$m" >> calls.log; sleep 60`)
			w := startWorker(t, r.args...)
			req := r.submit(t, ctx, "stopped")
			waitFor(t, time.Minute, func() bool { return len(readMarks(t, r.root)) > 0 }, "the tool to start\n%s", lazy(w.stderr.String))
			if err := w.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 30*time.Second, func() bool { return strings.Contains(w.stderr.String(), "draining") }, "the worker to drain\n%s", lazy(w.stderr.String))
			if err := w.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			sent := time.Now()
			res := w.wait(t, 20*time.Second)
			t.Logf("loop serve exited %d, %v after %s", res.code, time.Since(sent).Round(10*time.Millisecond), sig)
			evs := replayAll(t, r.srv.url())
			eff, _ := effectiveRun(byRun(evs)[req.RunID])
			rc := completed(t, checkRun(t, req.RunID, eff))
			failed := payloadsOf[events.ToolFailed](t, eff, events.StageToolFailed)
			if rc.Reason != events.ReasonInterrupted || len(failed) != 1 || !failed[0].Unknown {
				t.Fatalf("run.completed %+v, tool.failed %+v; want interrupted, the call's outcome unknown\n%s\nworker:\n%s", rc, failed, seqStages(eff), res.stderr)
			}
			verifyOK(t, "--nats", r.srv.url())
		})
	}
}
