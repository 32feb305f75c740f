package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
)

// Routing by agent: workers serving different agents share one bus, each
// run runs once on a worker that serves its agent, on the definition it
// started with. Every process is real: a nats-server, loop serve workers,
// loop submit and observer commands.

// opsScript is the scripted model of agent ops: one calculator call, then
// an answer no other agent gives.
const opsScript = `{"name": "ops", "replies": [
  {"content": "Adding up.", "tool_calls": [{"name": "calculator", "arguments": {"expression": "2+3"}}]},
  {"content": "ops says 2+3 = {{tool:calculator}} ({{prompt}})"}
]}`

// opsAgents writes an agent file defining ops (scripted, the calculator
// only) with extra lines appended to the agent, and returns its path.
func opsAgents(t *testing.T, extra string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ops.json"), []byte(opsScript), 0o600); err != nil {
		t.Fatal(err)
	}
	file := "agents:\n  - id: ops\n    model: scripted:ops.json\n    tools: [calculator]\n" + extra
	path := filepath.Join(dir, "ops.yaml")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runProc runs a binary to its end within d, without touching t (safe
// from other goroutines).
func runProc(d time.Duration, name string, args ...string) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, name), args...)
	cmd.Dir = os.TempDir()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code, err = ee.ExitCode(), nil
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}, err
}

// startedDefinition is the definition a run.started records, read without
// the events package's type (its fields as the wire has them).
type startedDefinition struct {
	Definition *struct {
		Digest  string `json:"digest"`
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"definition"`
	PreviousDefinition *struct {
		Digest string `json:"digest"`
	} `json:"previous_definition"`
}

// registered reads the digest the fleet registered for agent (KV
// hookbus_agents), "" when none.
func registered(t *testing.T, ctx context.Context, b *bus.Bus, agent string) string {
	t.Helper()
	kv, err := b.JetStream().KeyValue(ctx, "hookbus_agents")
	if err != nil {
		t.Fatalf("the agents bucket: %v", err)
	}
	e, err := kv.Get(ctx, agent)
	if err != nil {
		return ""
	}
	var d struct {
		Digest string `json:"digest"`
	}
	if err := json.Unmarshal(e.Value(), &d); err != nil {
		t.Fatalf("registered definition of %s: %v", agent, err)
	}
	return d.Digest
}

// A worker serving only ops (an agent file) and a plain worker (the demo
// agent) on one nats-server process: 12 demo runs and 4 ops runs, each
// waited for by its own loop submit --wait. Every run ends exactly once, on
// a worker serving its agent: the ops runs with the ops model and its
// calculator, on the definition the fleet registered for ops; the demo
// runs on the demo agent. None is dropped.
func TestRunsGoToTheWorkersOfTheirAgent(t *testing.T) {
	ctx := testCtx(t, 4*time.Minute)
	srv := startNATS(t)
	admin := adminBus(t, ctx, srv.url(), 1)
	ops := startWorker(t, "--nats", srv.url(), "--agents", opsAgents(t, ""), "--concurrency", "2")
	plain := startWorker(t, "--nats", srv.url(), "--concurrency", "2")

	type sub struct {
		agent string
		res   result
		err   error
	}
	var subs []*sub
	for i := 0; i < 16; i++ {
		agent := "demo"
		if i%4 == 3 {
			agent = "ops"
		}
		subs = append(subs, &sub{agent: agent})
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, s := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			s.res, s.err = runProc(90*time.Second, "loop", "submit", "--nats", srv.url(), "--agent", s.agent,
				"--session", fmt.Sprintf("route-%02d", i), "--wait", "--timeout", "60s", fmt.Sprintf("run %d", i))
		}()
	}
	wg.Wait()
	for i, s := range subs {
		if s.err != nil || s.res.code != 0 {
			t.Fatalf("submit %d (%s): exit %d, %v\n%s\n%s%s", i, s.agent, s.res.code, s.err, s.res.stdout, s.res.stderr, workerLogs([]*worker{ops, plain}))
		}
	}
	opsDigest := registered(t, ctx, admin, "ops")
	if opsDigest == "" {
		t.Fatalf("no definition of ops registered%s", workerLogs([]*worker{ops, plain}))
	}
	evs := streamEvents(t, ctx, admin)
	runs := byRun(evs)
	for i, s := range subs {
		want := "6*7 = 42"
		if s.agent == "ops" {
			want = "ops says 2+3 = 5"
		}
		if !strings.Contains(s.res.stdout, want) {
			t.Fatalf("submit %d (%s) answered %q, want %q: another agent's model ran it", i, s.agent, s.res.stdout, want)
		}
		id := runIDFrom(t, s.res.stderr)
		revs := runs[id]
		terminal := 0
		for _, e := range revs {
			if e.AgentID != s.agent {
				t.Fatalf("run %d (%s) has an event of agent %s", i, s.agent, e.AgentID)
			}
			switch e.Stage {
			case events.StageRunCompleted, events.StageRunFailed:
				terminal++
			case events.StageRunStarted:
				var p startedDefinition
				mustDecode(t, e, &p)
				switch {
				case p.Definition == nil:
					t.Fatalf("run %d (%s): run.started records no definition", i, s.agent)
				case s.agent == "ops" && p.Definition.Digest != opsDigest:
					t.Fatalf("ops run %d ran on definition %s, the fleet's is %s", i, p.Definition.Digest, opsDigest)
				case p.Definition.Name != s.agent:
					t.Fatalf("run %d (%s) ran on the definition of %q", i, s.agent, p.Definition.Name)
				}
			}
		}
		if terminal != 1 {
			t.Fatalf("run %d (%s) has %d terminal events: %s", i, s.agent, terminal, stagesLine(revs))
		}
	}
	for _, w := range []*worker{ops, plain} {
		if s := w.stderr.String(); strings.Contains(s, "dropping") {
			t.Fatalf("a worker dropped a run request:\n%s", s)
		}
	}
}

// A request for an agent no worker serves waits on the queue: loop submit
// --wait says so on stderr until its timeout, observer runs --queued lists
// it with its age (and names what it waits for, in JSON too), and a worker
// for the agent started later runs it.
func TestARequestNobodyServesWaitsVisibly(t *testing.T) {
	ctx := testCtx(t, 3*time.Minute)
	srv := startNATS(t)
	admin := adminBus(t, ctx, srv.url(), 1)
	plain := startWorker(t, "--nats", srv.url())

	sub := run(t, "loop", "submit", "--nats", srv.url(), "--agent", "ops", "--session", "lonely", "--wait", "--timeout", "3s", "anyone there?")
	if sub.code == 0 || !strings.Contains(sub.stderr, "no worker serves agent ops") {
		t.Fatalf("submit --wait for an agent nobody serves: exit %d\n%s\n%s\nworker:\n%s", sub.code, sub.stdout, sub.stderr, plain.stderr.String())
	}
	runID := runIDFrom(t, sub.stderr)
	if evs := replayRun(t, ctx, admin, runID); len(evs) != 0 {
		t.Fatalf("the demo worker ran the ops run: %s", stagesLine(evs))
	}
	q := run(t, "observer", "runs", "--queued", "--nats", srv.url())
	if q.code != 0 || !strings.Contains(q.stdout, shortID(runID)) || !strings.Contains(q.stdout, "no worker serves agent ops") ||
		!strings.Contains(q.stdout, "lonely") {
		t.Fatalf("observer runs --queued: exit %d\n%s\n%s", q.code, q.stdout, q.stderr)
	}
	qj := run(t, "observer", "runs", "--queued", "--json", "--nats", srv.url())
	var queued struct {
		RunID   string  `json:"run_id"`
		AgentID string  `json:"agent_id"`
		Session string  `json:"session_id"`
		Age     float64 `json:"age_seconds"`
		Waiting string  `json:"waiting_for"`
	}
	if qj.code != 0 || json.Unmarshal([]byte(strings.TrimSpace(qj.stdout)), &queued) != nil ||
		queued.RunID != runID || queued.AgentID != "ops" || queued.Session != "lonely" || queued.Age <= 0 ||
		!strings.Contains(queued.Waiting, "no worker serves agent ops") {
		t.Fatalf("observer runs --queued --json: exit %d %+v\n%s\n%s", qj.code, queued, qj.stdout, qj.stderr)
	}

	startWorker(t, "--nats", srv.url(), "--agents", opsAgents(t, ""))
	waitEvery(t, 60*time.Second, 200*time.Millisecond, func() bool {
		return stageCount(replayRun(t, ctx, admin, runID), events.StageRunCompleted) == 1
	}, "the queued run to run once a worker serves ops")
	q = run(t, "observer", "runs", "--queued", "--nats", srv.url())
	if q.code != 0 || strings.Contains(q.stdout, shortID(runID)) {
		t.Fatalf("observer runs --queued after the run: exit %d\n%s\n%s", q.code, q.stdout, q.stderr)
	}
}

// shortID is a run id as observer runs shows it.
func shortID(id string) string { return id[:12] }

// startedDefinitions lists the definition each run.started of a run
// records, in order (digest, then previous digest or "").
func startedDefinitions(t *testing.T, evs []*events.Event) [][2]string {
	t.Helper()
	var out [][2]string
	for _, e := range evs {
		if e.Stage != events.StageRunStarted {
			continue
		}
		var p startedDefinition
		mustDecode(t, e, &p)
		var d [2]string
		if p.Definition != nil {
			d[0] = p.Definition.Digest
		}
		if p.PreviousDefinition != nil {
			d[1] = p.PreviousDefinition.Digest
		}
		out = append(out, d)
	}
	return out
}

// queuedJSON reads observer runs --queued --json.
func queuedJSON(t *testing.T, url string) []map[string]any {
	t.Helper()
	r := run(t, "observer", "runs", "--queued", "--json", "--nats", url)
	if r.code != 0 {
		t.Fatalf("observer runs --queued --json: exit %d\n%s", r.code, r.stderr)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("observer runs --queued --json line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// A run waiting for approval when its agent's definition changes (a deploy:
// the worker of version 1 stops, one of version 2 starts). The answer
// resumes it pinned to the definition it started on. With
// on_definition_change: wait (the default), the new worker does not run
// it: the request is listed as waiting for its definition, and a worker of
// version 1 started later finishes it on version 1 (that worker says
// loudly that its definition is not the fleet's). With adopt, the new
// worker goes on with it, and the resumed attempt's run.started records
// both definitions.
func TestAResumedRunKeepsItsDefinition(t *testing.T) {
	for _, policy := range []string{"wait", "adopt"} {
		t.Run(policy, func(t *testing.T) {
			ctx := testCtx(t, 4*time.Minute)
			srv := startNATS(t)
			admin := adminBus(t, ctx, srv.url(), 1)
			approval := "    approval: {tools: [{tool: calculator}], expiry: 1h}\n"
			v1 := opsAgents(t, "    version: \"1\"\n"+approval)
			v2 := opsAgents(t, "    version: \"2\"\n    system: You add up, carefully.\n    on_definition_change: "+policy+"\n"+approval)

			old := startWorker(t, "--nats", srv.url(), "--agents", v1)
			sub := run(t, "loop", "submit", "--nats", srv.url(), "--agent", "ops", "--session", "deploy", "what is 2+3?")
			if sub.code != 0 {
				t.Fatalf("submit: %d %s", sub.code, sub.stderr)
			}
			runID := strings.TrimSpace(sub.stdout)
			waitEvery(t, 60*time.Second, 100*time.Millisecond, func() bool {
				return stageCount(replayRun(t, ctx, admin, runID), events.StageApprovalRequested) == 1
			}, "the run to ask for approval%s", lazy(func() string { return workerLogs([]*worker{old}) }))
			d1 := startedDefinitions(t, replayRun(t, ctx, admin, runID))[0][0]
			if d1 == "" || d1 != registered(t, ctx, admin, "ops") {
				t.Fatalf("the run started on definition %q; the fleet registered %q", d1, registered(t, ctx, admin, "ops"))
			}

			// The deploy: version 1 stops (its presence goes with it),
			// version 2 starts and replaces the registered definition.
			if err := old.cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			<-old.done
			neu := startWorker(t, "--nats", srv.url(), "--agents", v2)
			d2 := registered(t, ctx, admin, "ops")
			if d2 == d1 || d2 == "" {
				t.Fatalf("version 2 did not replace the registered definition (%s)", d2)
			}
			ok := run(t, "observer", "approve", runID, "--nats", srv.url(), "--by", "alice", "--wait", "30s")
			if ok.code != 0 {
				t.Fatalf("observer approve: %d\n%s\n%s%s", ok.code, ok.stdout, ok.stderr, workerLogs([]*worker{neu}))
			}

			if policy == "adopt" {
				var evs []*events.Event
				waitEvery(t, 60*time.Second, 200*time.Millisecond, func() bool {
					evs = replayRun(t, ctx, admin, runID)
					return stageCount(evs, events.StageRunCompleted) == 1
				}, "the new definition to adopt the run%s", lazy(func() string { return workerLogs([]*worker{neu}) }))
				defs := startedDefinitions(t, evs)
				if len(defs) != 2 || defs[0] != [2]string{d1, ""} || defs[1] != [2]string{d2, d1} {
					t.Fatalf("run.started definitions %v; want the start on %s, then the adoption by %s naming %s", defs, d1, d2, d1)
				}
				return
			}

			// wait: the resumption waits for definition 1, visibly.
			short := d1[:12]
			var entry map[string]any
			waitEvery(t, 30*time.Second, 200*time.Millisecond, func() bool {
				entry = nil
				for _, q := range queuedJSON(t, srv.url()) {
					if q["run_id"] == runID {
						entry = q
					}
				}
				return entry != nil && entry["definition"] == d1 &&
					strings.Contains(fmt.Sprint(entry["waiting_for"]), "no worker has definition "+short+" of agent ops")
			}, "the resumption listed as waiting for definition %s: %v", short, lazy(func() string { return fmt.Sprint(entry) }))
			if n := len(startedDefinitions(t, replayRun(t, ctx, admin, runID))); n != 1 {
				t.Fatalf("the run was resumed (%d run.started) by the worker of another definition%s", n, workerLogs([]*worker{neu}))
			}
			table := run(t, "observer", "runs", "--nats", srv.url())
			if !strings.Contains(table.stdout, shortID(runID)) || !strings.Contains(table.stdout, "no worker has definition "+short) {
				t.Fatalf("observer runs does not show the waiting resumption:\n%s\n%s", table.stdout, table.stderr)
			}

			// A worker of version 1 comes back: it says its definition is
			// not the fleet's, and finishes the run on it.
			back := startWorker(t, "--nats", srv.url(), "--agents", v1)
			if s := back.stderr.String(); !strings.Contains(s, "WARNING") || !strings.Contains(s, d1) || !strings.Contains(s, d2[:12]) {
				t.Fatalf("a worker whose definition is not the fleet's should say so, naming both:\n%s", s)
			}
			var evs []*events.Event
			waitEvery(t, 60*time.Second, 200*time.Millisecond, func() bool {
				evs = replayRun(t, ctx, admin, runID)
				return stageCount(evs, events.StageRunCompleted) == 1
			}, "the worker of definition 1 to finish the run%s", lazy(func() string { return workerLogs([]*worker{neu, back}) }))
			for _, d := range startedDefinitions(t, evs) {
				if d != [2]string{d1, ""} {
					t.Fatalf("run.started definitions %v: every attempt must run on %s", startedDefinitions(t, evs), d1)
				}
			}
			var rc events.RunCompleted
			mustDecode(t, evs[len(evs)-1], &rc)
			if rc.Reason != events.ReasonDone || !strings.Contains(rc.Answer, "ops says 2+3 = 5") {
				t.Fatalf("run.completed %+v", rc)
			}
		})
	}
}

// A deploy that changes an agent's definition while no worker of the
// registered one is left: the new worker takes none of the agent's new
// runs (its definition is not the fleet's), and loop submit --wait and
// observer runs --queued say so and name the command that resolves it;
// started with it, the new worker runs the queued run.
func TestAChangedDefinitionSaysHowToReplace(t *testing.T) {
	ctx := testCtx(t, 3*time.Minute)
	srv := startNATS(t)
	admin := adminBus(t, ctx, srv.url(), 1)
	old := startWorker(t, "--nats", srv.url(), "--agents", opsAgents(t, "    version: \"1\"\n"))
	old.kill(t)
	changed := opsAgents(t, "    version: \"1\"\n    max_steps: 7\n")
	second := startWorker(t, "--nats", srv.url(), "--agents", changed)

	sub := run(t, "loop", "submit", "--nats", srv.url(), "--agent", "ops", "--session", "stranded", "--wait", "--timeout", liveness.String(), "anyone?")
	if sub.code == 0 || !strings.Contains(sub.stderr, "the one registered") || !strings.Contains(sub.stderr, "loop serve --replace-definition") {
		t.Fatalf("submit --wait with only a changed definition live: exit %d\n%s", sub.code, sub.stderr)
	}
	runID := runIDFrom(t, sub.stderr)
	q := run(t, "observer", "runs", "--queued", "--nats", srv.url())
	if q.code != 0 || !strings.Contains(q.stdout, shortID(runID)) || !strings.Contains(q.stdout, "loop serve --replace-definition") {
		t.Fatalf("observer runs --queued: exit %d\n%s\n%s", q.code, q.stdout, q.stderr)
	}

	replacer := startWorker(t, "--nats", srv.url(), "--agents", changed, "--replace-definition")
	waitEvery(t, 60*time.Second, 200*time.Millisecond, func() bool {
		return stageCount(replayRun(t, ctx, admin, runID), events.StageRunCompleted) == 1
	}, "the stranded run to run once a worker replaces the definition")
	// observer runs names the worker it ran in: either, once the
	// definition they share is the fleet's.
	list := run(t, "observer", "runs", "--nats", srv.url(), "--session", "stranded")
	if list.code != 0 || !strings.Contains(list.stdout, "WORKER") || !strings.Contains(list.stdout, fmt.Sprintf(":%d ", replacer.cmd.Process.Pid)) &&
		!strings.Contains(list.stdout, fmt.Sprintf(":%d ", second.cmd.Process.Pid)) {
		t.Fatalf("observer runs: %d\n%s\n%s", list.code, list.stdout, list.stderr)
	}
}
