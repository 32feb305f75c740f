package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
)

// Load of the server-kill and leader-kill runs: runs of loadScript (four
// steps, a model reply every 700 ms, four tool calls of which two count
// themselves in calls.log), on two workers of four runs each.
const (
	loadRuns    = 48
	loadDelayMS = 700
	loadPrompt  = "count, and what is 6*7?"
)

// loadWorkerArgs are the loop serve flags of the load runs' workers.
func loadWorkerArgs(urls, script, root string, extra ...string) []string {
	return append([]string{"--nats", urls, "--concurrency", "4", "--lease", "6s",
		"--script", script, "--tools", loadTools, "--root", root, "-v"}, extra...)
}

// The only nats-server, a separate process, is SIGKILLed mid-load (a
// quarter of the runs ended) and started again on its store after 3 s,
// 12 s and 60 s; the last case again with workers that wait out an outage
// of 20 s only (--outage 20s), so their attempts stop, unrecorded, and the
// runs are taken up again once the server is back. Every run ends done,
// once; its effective record (supersede rule applied) has seqs 1..N, one
// tool.before and one tool.after per call; every Bash execution counted in
// calls.log is one recorded result or one call recorded as outcome unknown
// (never a second run of a call); every session rebuilds into a
// conversation a provider accepts, with each run once, and a follow-up run
// of each session that was resumed (and of a few others) is given exactly
// that conversation.
func TestFaultServerKilledAndRestarted(t *testing.T) {
	hardFaults(t)
	for _, tc := range []struct {
		name         string
		down, outage time.Duration
	}{
		{"down3s", 3 * time.Second, 0},
		{"down12s", 12 * time.Second, 0},
		{"down60s", 60 * time.Second, 0},
		{"down60s-outage20s", 60 * time.Second, 20 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) { serverKillTrial(t, tc.down, tc.outage) })
	}
}

func serverKillTrial(t *testing.T, down, outage time.Duration) {
	begin := time.Now()
	ctx := testCtx(t, 15*time.Minute)
	srv := startNATS(t)
	admin := adminBus(t, ctx, srv.url(), 1)
	root := t.TempDir()
	extra := []string{"--agent", "load"}
	if outage > 0 {
		extra = append(extra, "--outage", outage.String())
	}
	args := loadWorkerArgs(srv.url(), loadScriptFile(t, loadDelayMS), root, extra...)
	ws := []*worker{startWorker(t, args...), startWorker(t, args...)}

	const agent = "load"
	ids := submitRuns(t, ctx, admin, agent, "s", loadPrompt, loadRuns)
	waitEnded(t, ctx, admin, agent, loadRuns/4, 3*time.Minute, ws...)
	atKill := ended(ctx, admin, agent)
	srv.kill(t)
	time.Sleep(down) // the fault: the server is away this long
	srv.start(t)
	restarted := time.Now()
	waitEnded(t, ctx, admin, agent, loadRuns, 5*time.Minute+outage, ws...)
	recovered := time.Since(restarted)

	prior := followUps(t, ctx, admin, agent, ids, ws)
	all := make([]string, 0, len(prior)+len(ids))
	all = append(all, ids...)
	for id := range prior {
		all = append(all, id)
	}

	evs := replayAll(t, srv.url())
	fig, effs := auditRuns(t, evs, all, prior, loadShape)
	fig.FollowUps = len(prior)
	fig.Sessions = checkSessions(t, evs, all, loadShape)
	checkExecutions(t, root, effs, &fig)
	for i, w := range ws {
		select {
		case <-w.done:
			t.Errorf("worker %d exited (%d) during the run:\n%s", i+1, w.code, w.stderr.String())
		default:
		}
	}
	logWorkers(t, ws, fig)
	t.Logf("server SIGKILLed with %d of %d runs ended, down %v (workers' --outage %v); all ended %v after the restart; worker logs: %s; %s; wall time %v",
		atKill, loadRuns, down, cmpOr(outage, bus.DefaultOutageWait), recovered.Round(100*time.Millisecond), workerCounts(ws), fig, time.Since(begin).Round(time.Second))
}

// followUps submits a second run in every session of runIDs whose run was
// attempted more than once, and in the first four sessions, waits for them
// and returns their ids (each with 1: one run before it in its session).
func followUps(t *testing.T, ctx context.Context, b *bus.Bus, agent string, runIDs []string, ws []*worker) map[string]int {
	t.Helper()
	mine := map[string]bool{}
	for _, id := range runIDs {
		mine[id] = true
	}
	attempts := map[string]int{}
	session := map[string]string{}
	if _, err := b.Replay(ctx, bus.Filter{Agent: agent, Stages: []events.Stage{events.StageRunStarted}}, func(e *events.Event) error {
		if mine[e.RunID] {
			attempts[e.RunID]++
			session[e.RunID] = e.SessionID
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	pick := map[string]bool{}
	for i, id := range runIDs {
		if attempts[id] > 1 || i < 4 {
			pick[session[id]] = true
		}
	}
	before := ended(ctx, b, agent)
	out := map[string]int{}
	for s := range pick {
		req := &events.RunRequest{RunID: events.NewID(), AgentID: agent, SessionID: s, Prompt: "and again"}
		if err := runs.New(b).Submit(ctx, req); err != nil {
			t.Fatal(err)
		}
		out[req.RunID] = 1
	}
	waitEnded(t, ctx, b, agent, before+len(out), 3*time.Minute, ws...)
	return out
}

// workerCounts says what the workers' logs report: attempts that ended
// their run, attempts that lost their run to a newer attempt (left to it),
// and attempts that stopped without ending it (handed back to the queue:
// NATS away past the outage bound).
func workerCounts(ws []*worker) string {
	var ended, lost, back int
	for _, w := range ws {
		s := w.stderr.String()
		ended += strings.Count(s, `msg="run ended"`)
		lost += strings.Count(s, `msg="run taken over by another worker"`)
		back += strings.Count(s, `msg="run not ended, it will be retried"`)
	}
	return fmt.Sprintf("%d attempts ended their run, %d lost it to a newer attempt, %d stopped unrecorded", ended, lost, back)
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// logWorkers logs what the workers said of the runs that broke an
// invariant, and every attempt that stopped without ending its run.
func logWorkers(t *testing.T, ws []*worker, fig figures) {
	t.Helper()
	for _, id := range fig.Failed {
		t.Logf("what the workers logged of run %s:%s", id, workerLines(ws, id))
	}
	if s := workerLines(ws, `msg="run not ended`); s != "" {
		t.Logf("attempts stopped without ending their run:%s", s)
	}
}

// workerLines is what the workers logged about run id.
func workerLines(ws []*worker, id string) string {
	var b strings.Builder
	for i, w := range ws {
		for _, line := range strings.Split(w.stderr.String(), "\n") {
			if strings.Contains(line, id) {
				fmt.Fprintf(&b, "\n  worker %d: %s", i+1, line)
			}
		}
	}
	return b.String()
}
