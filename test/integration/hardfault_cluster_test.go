package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
)

// clusterTrials is how many times each leader is killed, one batch of
// loadRuns runs per trial, on one cluster.
const clusterTrials = 3

// clusterDown is how long a killed leader stays down.
const clusterDown = 5 * time.Second

// Three nats-server processes in a JetStream cluster, every stream and
// bucket R3, two workers (loop serve --replicas 3, every node's URL). In
// each of three trials a batch of runs is submitted, and once a quarter of
// it has ended the node leading the stream (HOOKBUS_EVENTS, then in the
// other subtest HOOKBUS_RUNS) is SIGKILLed and started again on its store
// after 5 s; the next trial waits until it is a current replica again.
// While the events leader dies, a foreground loop run (another process) is
// mid-run: it exits 0 with its answer. Every run ends done, once, with the
// invariants of the server-kill runs (see auditRuns, checkSessions,
// checkExecutions).
func TestFaultClusterLeaderKilled(t *testing.T) {
	hardFaults(t)
	t.Run("events-leader", func(t *testing.T) { clusterLeaderTrials(t, "HOOKBUS_EVENTS", true) })
	t.Run("runs-leader", func(t *testing.T) { clusterLeaderTrials(t, "HOOKBUS_RUNS", false) })
}

func clusterLeaderTrials(t *testing.T, stream string, foreground bool) {
	begin := time.Now()
	ctx := testCtx(t, 20*time.Minute)
	nodes := startNATSCluster(t, 3)
	urls := clusterURLs(nodes)
	admin := adminBus(t, ctx, urls, 3)
	checkProvisionedR3(t, ctx, admin)
	root := t.TempDir()
	script := loadScriptFile(t, loadDelayMS)
	var agents []string
	for trial := 1; trial <= clusterTrials; trial++ {
		agents = append(agents, fmt.Sprintf("t%d", trial))
	}
	args := loadWorkerArgs(urls, script, root, "--replicas", "3", "--agent", strings.Join(agents, ","))
	ws := []*worker{startWorker(t, args...), startWorker(t, args...)}

	var all []string
	prior := map[string]int{}
	for trial := 1; trial <= clusterTrials; trial++ {
		agent := fmt.Sprintf("t%d", trial)
		ids := submitRuns(t, ctx, admin, agent, "s", loadPrompt, loadRuns)
		all = append(all, ids...)
		waitEnded(t, ctx, admin, agent, loadRuns/4, 3*time.Minute, ws...)
		leader := streamLeader(t, ctx, admin, stream, 2)

		var fg *faultProc
		if foreground {
			fgAgent := agent + "-fg"
			fg = startFaultProc(t, "loop", "run", "--nats", urls, "--replicas", "3", "--agent", fgAgent, "--session", "fg",
				"--script", script, "--tools", loadTools, "--root", root, loadPrompt)
			// Kill once its first model call is under way.
			waitEvery(t, time.Minute, 20*time.Millisecond, func() bool {
				return slices.ContainsFunc(runEventsOfAgent(ctx, admin, fgAgent), func(e *events.Event) bool {
					return e.Stage == events.StageContextAssembled
				})
			}, "the foreground run to reach its first model call: %s", lazy(fg.stderr.String))
		}
		node := nodeNamed(t, nodes, leader)
		atKill := ended(ctx, admin, agent)
		node.kill(t)
		killed := time.Now()
		time.Sleep(clusterDown) // the fault: the node is away this long
		node.start(t)
		waitEnded(t, ctx, admin, agent, loadRuns, 5*time.Minute, ws...)
		recovered := time.Since(killed)
		if fg != nil {
			r := fg.wait(t, 5*time.Minute)
			if r.code != 0 || !strings.Contains(r.stdout, "6*7 = 42") {
				t.Errorf("trial %d: the foreground loop run during the leader kill: exit %d\nstdout %s\nstderr %s", trial, r.code, r.stdout, r.stderr)
			} else {
				id := loopRunID(t, r)
				all = append(all, id)
				prior[id] = 0
			}
		}
		for id, n := range followUps(t, ctx, admin, agent, ids, ws) {
			all = append(all, id)
			prior[id] = n
		}
		newLeader := streamLeader(t, ctx, admin, stream, 2)
		t.Logf("trial %d: %s leader %s SIGKILLed with %d of %d runs ended, down %v; all ended %v after the kill; leader now %s",
			trial, stream, leader, atKill, loadRuns, clusterDown, recovered.Round(100*time.Millisecond), newLeader)
	}

	evs := replayAll(t, urls)
	fig, effs := auditRuns(t, evs, all, prior, loadShape)
	fig.Sessions = checkSessions(t, evs, all, loadShape)
	checkExecutions(t, root, effs, &fig)
	for _, n := range prior {
		fig.FollowUps += n
	}
	logWorkers(t, ws, fig)
	t.Logf("%d trials, leader of %s SIGKILLed and down %v in each; worker logs: %s; %s; wall time %v",
		clusterTrials, stream, clusterDown, workerCounts(ws), fig, time.Since(begin).Round(time.Second))
}

// runEventsOfAgent reads the events of agent (nil when the stream cannot be
// read right now).
func runEventsOfAgent(ctx context.Context, b *bus.Bus, agent string) []*events.Event {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var out []*events.Event
	if _, err := b.Replay(ctx, bus.Filter{Agent: agent}, func(e *events.Event) error {
		out = append(out, e)
		return nil
	}); err != nil {
		return nil
	}
	return out
}
