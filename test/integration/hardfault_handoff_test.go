package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
)

// handOffAgents writes two agent files defining ops, versions 1 and 2 (a
// deploy), on a script that counts its Bash execution in calls.log under
// root, then thinks for 2 s before its next step, and returns their paths.
func handOffAgents(t *testing.T, root string) (v1, v2 string) {
	t.Helper()
	dir := t.TempDir()
	bash, _ := json.Marshal(map[string]string{"command": countCommand})
	script := `[{"content": "Counting.", "tool_calls": [{"name": "Bash", "arguments": ` + string(bash) + `}]},
  {"content": "Adding up.", "delay_ms": 2000, "tool_calls": [{"name": "calculator", "arguments": {"expression": "2+3"}}]},
  {"content": "ops says 2+3 = {{tool:calculator}}, mark {{tool:Bash}}"}]`
	if err := os.WriteFile(filepath.Join(dir, "ops.json"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(version string) string {
		path := filepath.Join(dir, "ops-v"+version+".yaml")
		file := fmt.Sprintf("agents:\n  - id: ops\n    version: %q\n    model: scripted:ops.json\n    root: %s\n    tools: [Bash, calculator]\n", version, root)
		if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	return write("1"), write("2")
}

// A run cut off on definition 1 (its worker SIGKILLed mid-step), a deploy
// of definition 2 meanwhile, and the only nats-server SIGKILLed before and
// after the run's request is handed to the workers of definition 1: the
// worker of definition 2 hands the request over once and never runs it
// (however often it and the server restart), observer runs --queued lists
// it as waiting for definition 1, and a worker of definition 1 started
// later finishes it: one end, every attempt on definition 1, the Bash
// command run once.
func TestFaultHandOffAcrossRestarts(t *testing.T) {
	hardFaults(t)
	ctx := testCtx(t, 6*time.Minute)
	srv := startNATS(t)
	url := srv.url()
	admin := adminBus(t, ctx, url, 1)
	root := t.TempDir()
	v1, v2 := handOffAgents(t, root)

	old := startWorker(t, "--nats", url, "--agents", v1, "--lease", "3s", "-v")
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "ops", SessionID: "deploy", Prompt: "count, and what is 2+3?"}
	if err := runs.New(admin).Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	waitEvery(t, time.Minute, 50*time.Millisecond, func() bool {
		return len(readMarks(t, root)) == 1 && has(runEventsOf(ctx, admin, req.RunID), req.RunID, events.StageContextAssembled, 2)
	}, "the run to reach its second step\n%s", lazy(old.stderr.String))
	old.kill(t) // mid-step: the model thinks
	d1 := registered(t, ctx, admin, "ops")

	srv.kill(t) // the request waits for its lease while the server is away
	srv.start(t)
	neu := startWorker(t, "--nats", url, "--agents", v2, "--lease", "3s", "-v")
	d2 := registered(t, ctx, admin, "ops")
	if d1 == "" || d2 == d1 {
		t.Fatalf("definitions registered: %q, then %q; want version 2 to replace version 1", d1, d2)
	}
	const handed = "handed to the workers of definition " // bus.RunConsumer's log
	waitFor(t, time.Minute, func() bool { return strings.Contains(neu.stderr.String(), handed+d1[:12]) },
		"the worker of definition 2 to hand the run over\n%s", lazy(neu.stderr.String))
	logs := neu.stderr.String()
	neu.kill(t)
	srv.kill(t) // the pinned request is stored; the server goes away again
	srv.start(t)
	neu2 := startWorker(t, "--nats", url, "--agents", v2, "--lease", "3s", "-v")

	var entry map[string]any
	waitEvery(t, time.Minute, 200*time.Millisecond, func() bool {
		entry = nil
		for _, q := range queuedJSON(t, url) {
			if q["run_id"] == req.RunID {
				entry = q
			}
		}
		return entry != nil && entry["definition"] == d1
	}, "the run listed as waiting for definition %s: %v", d1[:12], lazy(func() string { return fmt.Sprint(entry) }))
	if n := stageCount(replayRun(t, ctx, admin, req.RunID), events.StageRunStarted); n != 1 {
		t.Fatalf("the run has %d run.started before a worker of definition 1 is back: a worker of definition 2 ran it\n%s%s", n, logs, neu2.stderr.String())
	}

	back := startWorker(t, "--nats", url, "--agents", v1, "--lease", "3s", "-v")
	var evs []*events.Event
	waitEvery(t, time.Minute, 200*time.Millisecond, func() bool {
		evs = replayRun(t, ctx, admin, req.RunID)
		return stageCount(evs, events.StageRunCompleted)+stageCount(evs, events.StageRunFailed) > 0
	}, "the worker of definition 1 to finish the run\n%s", lazy(back.stderr.String))

	all := replayAll(t, url)
	checkUniqueIDs(t, all)
	raw := byRun(all)[req.RunID]
	if got := ends(raw, req.RunID); len(got) != 1 {
		t.Fatalf("the run has %d ends\n%s", len(got), seqStages(raw))
	}
	eff, _ := effectiveRun(raw)
	if rc := completed(t, checkRun(t, req.RunID, eff)); rc.Reason != events.ReasonDone || !strings.Contains(rc.Answer, "ops says 2+3 = 5") {
		t.Fatalf("run.completed %+v\n%s", rc, seqStages(eff))
	}
	for _, d := range startedDefinitions(t, eff) {
		if d != [2]string{d1, ""} {
			t.Fatalf("run.started definitions %v: every attempt must run on %s", startedDefinitions(t, eff), d1)
		}
	}
	if marks := readMarks(t, root); len(marks) != 1 {
		t.Fatalf("calls.log counts %d executions, want 1: %v", len(marks), marks)
	}
	if n := strings.Count(logs+neu2.stderr.String(), handed); n != 1 {
		t.Fatalf("the run was handed over %d times, want once\n%s%s", n, logs, neu2.stderr.String())
	}
	verifyOK(t, "--nats", url, "--run", req.RunID)
	t.Logf("handed over once, ended on definition %s; the run's record: %s", d1[:12], seqStages(eff))
}
