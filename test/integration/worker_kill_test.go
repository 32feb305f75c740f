package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
)

// workerScript is the worker's script: step 1 asks the clock and the
// calculator, step 2 (after delayMS) answers with both results.
func workerScript(t *testing.T, delayMS int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "script.json")
	script := `[
  {"content": "Let me check.", "tool_calls": [{"name": "clock", "arguments": {}}, {"name": "calculator", "arguments": {"expression": "6*7"}}]},
  {"content": "It is {{tool:clock}}, and 6*7 = {{tool:calculator}}.", "delay_ms": ` + strconv.Itoa(delayMS) + `}
]`
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A worker process (loop serve, 3s lease) is SIGKILLed while its run waits
// for the model's second reply; step 1's tools are recorded. A second
// worker process takes the run over once the lease lapses and resumes it:
// step 1's tools do not run again (one tool.before and one tool.after per
// call), the resumed attempt's run.started says resumed, the answer
// carries the first attempt's tool results, and the run completes once.
func TestWorkerKilledMidRunIsResumed(t *testing.T) {
	ctx := testCtx(t, 2*time.Minute)
	srv, _ := bustest.Start(t, bustest.WithListener())
	url := srv.ClientURL()
	b := newBus(t, connect(t, url))
	if err := b.Provision(ctx); err != nil {
		t.Fatal(err)
	}

	// Both workers run one definition of agent wk (the same script): a
	// resumed attempt runs only on the definition its run started with.
	// The model takes 10 s over step 2: the first worker is killed long
	// before; the second answers after the wait.
	script := workerScript(t, 10_000)
	first, firstOut := start(t, "loop", "serve", "--nats", url, "--lease", "3s", "--concurrency", "1", "--agent", "wk", "--script", script)
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(firstOut.String(), "taking runs") }, "the first worker to start: %s", firstOut)
	sub := run(t, "loop", "submit", "--nats", url, "--agent", "wk", "--session", "s1", "time and sum?")
	runID := strings.TrimSpace(sub.stdout)
	if sub.code != 0 || events.ValidateID("run", runID) != nil {
		t.Fatalf("loop submit: %d %q %s", sub.code, sub.stdout, sub.stderr)
	}
	// Step 2's context.assembled is stored after step 1's two tool.after:
	// the worker is then waiting for the model.
	var before []*events.Event
	waitFor(t, 30*time.Second, func() bool {
		before = runEventsOf(ctx, b, runID)
		return has(before, runID, events.StageContextAssembled, 2)
	}, "step 2 under way; worker: %s", firstOut)
	if err := first.Process.Kill(); err != nil { // SIGKILL: no drain, no hand-back
		t.Fatal(err)
	}
	_ = first.Wait()
	killed := time.Now()

	_, secondOut := start(t, "loop", "serve", "--nats", url, "--lease", "3s", "--concurrency", "1", "-v", "--agent", "wk", "--script", script)
	end, err := b.WaitRun(ctx, "wk", "s1", runID)
	if err != nil {
		t.Fatalf("waiting for the run: %v\nsecond worker: %s", err, secondOut)
	}
	t.Logf("worker killed; the run ended %v later on the second worker (lease 3s)", time.Since(killed).Round(time.Millisecond))

	evs := streamEvents(t, ctx, b)
	checkUniqueIDs(t, evs)
	revs := byRun(evs)[runID]
	rc := completed(t, checkRun(t, runID, revs))
	if end.Stage != events.StageRunCompleted || rc.Reason != events.ReasonDone {
		t.Fatalf("run after the kill: %s %s %s\nstages: %s\nsecond worker: %s", end.Stage, rc.Reason, rc.Detail, stagesLine(revs), secondOut)
	}
	tb, ta := toolCounts(t, revs)
	for _, id := range []string{"call_1_1", "call_1_2"} {
		if tb[id] != 1 || ta[id] != 1 {
			t.Errorf("tool call %s: %d tool.before, %d tool.after; want 1 each (run once, by the first worker)", id, tb[id], ta[id])
		}
	}
	var clock string
	for _, e := range before {
		if e.Stage == events.StageToolAfter {
			var p events.ToolAfter
			mustDecode(t, e, &p)
			if p.Call.Name == "clock" {
				clock = p.Result.Content
			}
		}
	}
	if want := "It is " + clock + ", and 6*7 = 42."; clock == "" || rc.Answer != want {
		t.Fatalf("answer %q, want %q (the first attempt's results)", rc.Answer, want)
	}
	var started []events.RunStarted
	for _, e := range revs {
		if e.Stage == events.StageRunStarted {
			var p events.RunStarted
			mustDecode(t, e, &p)
			started = append(started, p)
		}
	}
	if len(started) != 2 || started[0].Resumed || !started[1].Resumed || started[1].Prompt != "time and sum?" {
		t.Fatalf("run.started events: %+v; want the first attempt's and a resumed one", started)
	}
	// The worker logs the end once its attempt returns, a moment after the
	// end is stored.
	waitFor(t, 10*time.Second, func() bool { return strings.Contains(secondOut.String(), "run ended") },
		"the second worker to log the end of the run:\n%s", secondOut)
}
