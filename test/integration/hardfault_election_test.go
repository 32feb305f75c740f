package integration

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
)

// A worker started while the cluster elects a JetStream meta leader (the
// leader SIGSTOPped, the two other nodes keeping quorum) waits, saying so,
// and takes runs once a leader exists; the runs submitted meanwhile all end.
func TestFaultWorkerStartsDuringMetaElection(t *testing.T) {
	hardFaults(t)
	ctx := testCtx(t, 5*time.Minute)
	nodes := startNATSCluster(t, 3)
	urls := clusterURLs(nodes)
	adminBus(t, ctx, urls, 3)
	leader := nodeNamed(t, nodes, metaLeader(t, nodes))
	var others []*natsNode
	for _, n := range nodes {
		if n != leader {
			others = append(others, n)
		}
	}
	// The test's own connection goes to the nodes that stay up.
	live := newBus(t, connect(t, clusterURLs(others), nats.Name("hookbus-election-test")), bus.WithReplicas(3))

	signalNode(t, leader, syscall.SIGSTOP)
	stopped := time.Now()
	continued := false
	defer func() {
		if !continued {
			signalNode(t, leader, syscall.SIGCONT)
		}
	}()
	root := t.TempDir()
	w := &worker{faultProc: startFaultProc(t, "loop", append([]string{"serve"},
		loadWorkerArgs(urls, loadScriptFile(t, 100), root, "--replicas", "3", "--agent", "el", "--outage", "2m")...)...)}
	const n = 12
	ids := make([]string, n)
	for i := range ids {
		ids[i] = submitUntilStored(t, ctx, live, "el", fmt.Sprintf("el%03d", i))
	}
	submitted := time.Since(stopped)
	waitFor(t, 3*time.Minute, func() bool {
		select {
		case <-w.done:
			t.Fatalf("loop serve exited %d during the election:\n%s", w.code, w.stderr.String())
		default:
		}
		return strings.Contains(w.stderr.String(), "taking runs")
	}, "loop serve to take runs:\n%s", lazy(w.stderr.String))
	took := time.Since(stopped)
	out := w.stderr.String()
	if !strings.Contains(out, "JetStream unavailable") || !strings.Contains(out, "waiting, up to 2m0s (--outage)") {
		t.Errorf("loop serve took runs %v after the meta leader stopped without saying it waited:\n%s", took, out)
	}
	signalNode(t, leader, syscall.SIGCONT)
	continued = true
	waitEnded(t, ctx, live, "el", n, 3*time.Minute, w)
	var waits []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "JetStream unavailable") || strings.Contains(l, "JetStream available again") {
			waits = append(waits, l)
		}
	}
	t.Logf("meta leader %s SIGSTOPped; %d runs submitted within %v; loop serve took runs %v after the stop, saying:\n%s\nall %d runs ended %v after the stop",
		leader.name, n, submitted.Round(time.Millisecond), took.Round(time.Millisecond), strings.Join(waits, "\n"), n, time.Since(stopped).Round(time.Millisecond))
}

// An approval whose wake-up at its expiry cannot be stored when the run
// starts waiting (no stream captures the wake-ups: the wakes stream is
// unavailable to it) still expires by the agent's policy once the stream
// is back: the run resumes and ends.
func TestApprovalExpiresWhenItsWakeUpFailedFirst(t *testing.T) {
	ctx := testCtx(t, 3*time.Minute)
	addr := freeAddr(t)
	url := "nats://" + addr
	w := &worker{faultProc: startFaultProc(t, "loop", "serve", "--store", t.TempDir(), "--listen", addr, "--agents", approvalAgents(t, "2s", "deny"))}
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(w.stderr.String(), "taking runs") }, "the worker to start:\n%s", lazy(w.stderr.String))
	admin := newBus(t, connect(t, url))
	s, err := admin.JetStream().Stream(ctx, admin.Names().Wakes)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	away := cfg
	away.Subjects = []string{"elsewhere.>"}
	if _, err := admin.JetStream().UpdateStream(ctx, away); err != nil {
		t.Fatal(err)
	}
	sub := startFaultProc(t, "loop", "submit", "--nats", url, "--agent", "ops", "--wait", "--timeout", "45s", "what is 6*7?")
	waitFor(t, 30*time.Second, func() bool {
		out := w.stderr.String()
		return strings.Contains(out, "wake-up not stored") || strings.Contains(out, "was not scheduled")
	}, "the wake-up to fail:\n%s", lazy(w.stderr.String))
	failed := time.Now()
	if _, err := admin.JetStream().UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	r := sub.wait(t, time.Minute)
	if r.code != 0 || !strings.Contains(r.stdout, "6*7 = rejected by hookbus") {
		t.Fatalf("loop submit --wait: exit %d\nstdout %s\nstderr %s\nworker:\n%s", r.code, r.stdout, r.stderr, w.stderr.String())
	}
	var res events.ApprovalResolved
	for _, e := range replayRun(t, ctx, admin, runIDFrom(t, r.stderr)) {
		if e.Stage == events.StageApprovalResolved {
			mustDecode(t, e, &res)
		}
	}
	if !res.Expired || res.Channel != events.ChannelExpiry {
		t.Fatalf("approval.resolved %+v, want it expired", res)
	}
	t.Logf("the run ended %v after its wake-up first failed", time.Since(failed).Round(time.Millisecond))
}

// metaLeader is the name of the node the nodes' logs last name as the
// JetStream meta leader.
func metaLeader(t *testing.T, nodes []*natsNode) string {
	t.Helper()
	said := regexp.MustCompile(`Self is new JetStream cluster metadata leader|JetStream cluster new metadata leader: ([^/\s]+)`)
	var name string
	waitFor(t, time.Minute, func() bool {
		for _, n := range nodes {
			all := said.FindAllStringSubmatch(n.log(), -1)
			if len(all) == 0 {
				continue
			}
			last := all[len(all)-1]
			if name = last[1]; name == "" {
				name = n.name
			}
			return true
		}
		return false
	}, "a meta leader in the nodes' logs")
	return name
}

// signalNode sends sig to the node's process (SIGSTOP, SIGCONT).
func signalNode(t *testing.T, n *natsNode, sig syscall.Signal) {
	t.Helper()
	n.mu.Lock()
	cmd := n.cmd
	n.mu.Unlock()
	if cmd == nil {
		t.Fatalf("nats-server %s is not running", n.name)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v to nats-server %s: %v", sig, n.name, err)
	}
}

// submitUntilStored queues a run of agent on session, sending it again
// (the same run: queued once) while JetStream does not store it.
func submitUntilStored(t *testing.T, ctx context.Context, b *bus.Bus, agent, session string) string {
	t.Helper()
	req := &events.RunRequest{RunID: events.NewID(), AgentID: agent, SessionID: session, Prompt: loadPrompt}
	var err error
	waitEvery(t, 2*time.Minute, 200*time.Millisecond, func() bool {
		sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		err = runs.New(b).Submit(sctx, req)
		return err == nil
	}, "run %s submitted: %v", req.RunID, lazy(func() string { return fmt.Sprint(err) }))
	return req.RunID
}
