package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/nats-io/nats.go"
)

// A tool never runs twice because a worker died: each test SIGKILLs a
// worker at a point of a tool call and lets a second worker resume the run.

// oneCallScript writes a two-step script: step 1 runs command with Bash,
// step 2 answers with its result.
func oneCallScript(t *testing.T, command string) string {
	t.Helper()
	args, _ := json.Marshal(map[string]any{"command": command, "timeout": 120000})
	script := `[{"content": "Running it.", "tool_calls": [{"name": "Bash", "arguments": ` + string(args) + `}]},
  {"content": "Result: {{tool:Bash}}"}]`
	path := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// toolRun is the setting of one tool test: a nats-server process, the
// test's bus on it, the workers' root and flags.
type toolRun struct {
	srv  *natsNode
	b    *bus.Bus
	root string
	args []string
}

func newToolRun(t *testing.T, ctx context.Context, command string) *toolRun {
	t.Helper()
	srv := startNATS(t)
	root := t.TempDir()
	return &toolRun{srv: srv, b: adminBus(t, ctx, srv.url(), 1), root: root,
		args: []string{"--nats", srv.url(), "--concurrency", "1", "--lease", "3s", "--script", oneCallScript(t, command), "--tools", "Bash", "--root", root, "-v",
			"--agent", toolAgents}}
}

// toolAgents are the agents the tool tests' workers serve (a run of
// another agent would wait for a worker that serves it).
const toolAgents = "slowafter,slowtool,paused,atonce,stopped"

// submit queues one run and returns it.
func (r *toolRun) submit(t *testing.T, ctx context.Context, agent string) *events.RunRequest {
	t.Helper()
	req := &events.RunRequest{RunID: events.NewID(), AgentID: agent, SessionID: "s1", Prompt: "run it"}
	if err := runs.New(r.b).Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	return req
}

// resume starts a second worker and returns the run's effective record
// once it ended (done, its record whole), and the answer.
func (r *toolRun) resume(t *testing.T, ctx context.Context, req *events.RunRequest, killed time.Time) ([]*events.Event, events.RunCompleted) {
	t.Helper()
	second := startWorker(t, r.args...)
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := r.b.WaitRun(wctx, req.AgentID, req.SessionID, req.RunID); err != nil {
		t.Fatalf("waiting for the run: %v\nsecond worker:\n%s", err, second.stderr.String())
	}
	t.Logf("the second worker ended the run %v after the kill", time.Since(killed).Round(100*time.Millisecond))
	evs := replayAll(t, r.srv.url())
	checkUniqueIDs(t, evs)
	eff, dropped := effectiveRun(byRun(evs)[req.RunID])
	if dropped != 0 {
		t.Logf("%d events superseded", dropped)
	}
	rc := completed(t, checkRun(t, req.RunID, eff))
	if rc.Reason != events.ReasonDone {
		t.Fatalf("run ended %s (%s), want done\n%s\nsecond worker:\n%s", rc.Reason, rc.Detail, seqStages(eff), second.stderr.String())
	}
	started := payloadsOf[events.RunStarted](t, eff, events.StageRunStarted)
	if len(started) != 2 || started[0].Resumed || !started[1].Resumed {
		t.Fatalf("run.started: %+v; want the first attempt's and a resumed one\n%s", started, seqStages(eff))
	}
	return eff, rc
}

// A worker is SIGKILLed while a slow tool.after interceptor (another
// process, 3 s a call) holds the call's result: the stream holds the call's
// tool.result (its raw result, recorded before tool.after interceptors
// run) and no tool.after. The run resumed by a second worker asks the
// interceptor again about the recorded result, does not run the tool again
// (calls.log counts one execution), and records one tool.after with it.
func TestFaultWorkerKilledWhileToolAfterInterceptorPending(t *testing.T) {
	hardFaults(t)
	begin := time.Now()
	ctx := testCtx(t, 5*time.Minute)
	r := newToolRun(t, ctx, countCommand)
	if err := remote.NewRegistry(r.b).Put(ctx, interceptors.Registration{Plugin: "slow", Stage: events.StageToolAfter, Tools: "Bash", Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	asked := make(chan string, 8)
	nc := connect(t, r.srv.url())
	if _, err := nc.Subscribe(receivedSubject("slow"), func(m *nats.Msg) { asked <- string(m.Data) }); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	startInterceptor(t, r.srv.url(), "slow", "slow-after")

	first := startWorker(t, r.args...)
	req := r.submit(t, ctx, "slowafter")
	var result string
	select {
	case result = <-asked:
	case <-time.After(time.Minute):
		t.Fatalf("the tool.after interceptor was never asked\nworker:\n%s", first.stderr.String())
	}
	first.kill(t) // the interceptor still holds the request
	killed := time.Now()

	held := runEventsOf(ctx, r.b, req.RunID)
	if !has(held, req.RunID, events.StageToolResult, 1) || has(held, req.RunID, events.StageToolAfter, 1) {
		t.Fatalf("after the kill the stream holds %s; want tool.result and no tool.after", seqStages(held))
	}
	eff, rc := r.resume(t, ctx, req, killed)

	var again string
	select {
	case again = <-asked:
	default:
		t.Fatal("the resumed run did not ask the tool.after interceptor")
	}
	marks := readMarks(t, r.root)
	if len(marks) != 1 || strings.TrimSpace(result) != marks[0].text || again != result {
		t.Fatalf("calls.log %v; the interceptor was asked about %q, then %q: want one execution, asked twice about its result", marks, result, again)
	}
	tb, ta := toolCounts(t, eff)
	recorded := payloadsOf[events.ToolResultRecord](t, eff, events.StageToolResult)
	afters := payloadsOf[events.ToolAfter](t, eff, events.StageToolAfter)
	if tb["call_1_1"] != 1 || ta["call_1_1"] != 1 || len(recorded) != 1 || len(afters) != 1 || afters[0].Result.Content != marks[0].text {
		t.Fatalf("tool events: %v tool.before, %v tool.after, tool.result %+v, tool.after %+v; want one each, with the one execution's result", tb, ta, recorded, afters)
	}
	decided := payloadsOf[events.HookDecided](t, eff, events.StageHookDecided)
	if len(decided) != 1 || decided[0].Plugin != "slow" {
		t.Fatalf("hook.decided %+v; want the resumed run's call of slow", decided)
	}
	if !strings.Contains(rc.Answer, marks[0].text) {
		t.Fatalf("answer %q lacks the tool's result %s", rc.Answer, marks[0].text)
	}
	t.Logf("tool ran once (%s); the interceptor was asked twice about it; wall time %v", marks[0].text, time.Since(begin).Round(time.Second))
}

// A worker is SIGKILLed while a slow tool that is not idempotent (Bash) runs:
// it has counted its execution in calls.log and sleeps. The run resumed by
// a second worker finds the call's tool.before and nothing after it: the
// outcome is unknown, so it records tool.failed with unknown=true and gives
// the model an error result saying so; the tool is not run again (calls.log
// still counts one execution).
func TestFaultWorkerKilledWhileToolRuns(t *testing.T) {
	hardFaults(t)
	begin := time.Now()
	ctx := testCtx(t, 5*time.Minute)
	r := newToolRun(t, ctx, `m="$(date +%s%N)-$$"; echo "$m" >> calls.log; sleep 30; echo "$m"`)
	first := startWorker(t, r.args...)
	req := r.submit(t, ctx, "slowtool")
	var marks []mark
	waitFor(t, time.Minute, func() bool {
		marks = readMarks(t, r.root)
		return len(marks) > 0
	}, "the tool to start\nworker:\n%s", lazy(first.stderr.String))
	first.kill(t)
	killed := time.Now()
	// The shell (its own process group, led by the pid in the mark) outlives
	// the worker; it would only sleep and print to a dead pipe.
	_, pid, _ := strings.Cut(marks[0].text, "-")
	if pgid, err := strconv.Atoi(pid); err == nil {
		t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	}

	eff, rc := r.resume(t, ctx, req, killed)
	tb, ta := toolCounts(t, eff)
	failed := payloadsOf[events.ToolFailed](t, eff, events.StageToolFailed)
	afters := payloadsOf[events.ToolAfter](t, eff, events.StageToolAfter)
	if tb["call_1_1"] != 1 || ta["call_1_1"] != 1 || len(failed) != 1 || !failed[0].Unknown || len(afters) != 1 ||
		!afters[0].Result.IsError || !strings.Contains(afters[0].Result.Content, "outcome unknown") {
		t.Fatalf("tool events: %v tool.before, %v tool.after, tool.failed %+v, tool.after %+v; want the outcome recorded unknown", tb, ta, failed, afters)
	}
	if has(eff, req.RunID, events.StageToolResult, 0) {
		t.Fatalf("a tool.result for a call whose worker died while it ran\n%s", seqStages(eff))
	}
	if now := readMarks(t, r.root); len(now) != 1 {
		t.Fatalf("calls.log counts %d executions, want 1: %v", len(now), now)
	}
	if !strings.Contains(rc.Answer, "outcome unknown") {
		t.Fatalf("answer %q does not pass on the unknown outcome", rc.Answer)
	}
	t.Logf("tool ran once, its outcome recorded unknown (tool.failed: %s); wall time %v", failed[0].Error, time.Since(begin).Round(time.Second))
}
