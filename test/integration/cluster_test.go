package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/loop/tools"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// streamLeader waits for the stream to have a leader and at least
// followers current followers, and returns the leader's name.
func streamLeader(t *testing.T, ctx context.Context, b *bus.Bus, stream string, followers int) string {
	t.Helper()
	var leader string
	var last string
	waitFor(t, 60*time.Second, func() bool {
		// One attempt waits 2s at most: a request lost with a dead node
		// would hold the poll until ctx's end.
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		s, err := b.JetStream().Stream(ctx, stream)
		if err != nil {
			last = err.Error()
			return false
		}
		info, err := s.Info(ctx)
		if err != nil {
			last = err.Error()
			return false
		}
		last = fmt.Sprintf("cluster %+v", info.Cluster)
		if info.Cluster == nil || info.Cluster.Leader == "" {
			return false
		}
		current := 0
		for _, r := range info.Cluster.Replicas {
			if r.Current && !r.Offline {
				current++
			}
		}
		leader = info.Cluster.Leader
		return current >= followers
	}, "stream %s to have a leader and %d current followers (last: %s)", stream, followers, lazy(func() string { return last }))
	return leader
}

// Provision with WithReplicas(3) on a 3-node cluster: every stream and
// bucket is R3 with a leader and two current followers.
func checkProvisionedR3(t *testing.T, ctx context.Context, b *bus.Bus) {
	t.Helper()
	n := b.Names()
	for _, stream := range []string{n.Events, n.Runs, n.DeadLetters, "KV_" + n.Hooks, "KV_" + n.Trust, "OBJ_" + n.Payloads} {
		streamLeader(t, ctx, b, stream, 2)
		s, err := b.JetStream().Stream(ctx, stream)
		if err != nil {
			t.Fatalf("stream %s: %v", stream, err)
		}
		if r := s.CachedInfo().Config.Replicas; r != 3 {
			t.Fatalf("stream %s has %d replicas, want 3", stream, r)
		}
	}
	for _, bucket := range []string{n.Hooks, n.Trust} {
		kv, err := b.JetStream().KeyValue(ctx, bucket)
		if err != nil {
			t.Fatalf("bucket %s: %v", bucket, err)
		}
		st, err := kv.Status(ctx)
		if err != nil {
			t.Fatalf("bucket %s: %v", bucket, err)
		}
		if info := st.(*jetstream.KeyValueBucketStatus).StreamInfo(); info.Config.Replicas != 3 {
			t.Fatalf("bucket %s has %d replicas", bucket, info.Config.Replicas)
		}
	}
}

// A run on a 3-node cluster loses the leader of HOOKBUS_EVENTS midway, and
// with it the server the loop is connected to: the leader is shut down
// while the write-ahead tool.before of step 2 is in flight (step 1's
// tool.after is stored by then). The loop reconnects to a survivor, the
// stream elects a new leader, the lost publish is sent again, and the run
// completes. Read back from a survivor, every event of the run is there
// once, seqs 1..N, no tool ran twice, and the answer carries both tools'
// results.
func TestClusterLeaderKilledMidRun(t *testing.T) {
	ctx := testCtx(t, 2*time.Minute)
	c := bustest.StartCluster(t, 3)
	admin := newBus(t, connect(t, c.URLs()), bus.WithReplicas(3))
	if err := admin.Provision(ctx); err != nil {
		t.Fatalf("provision R3: %v", err)
	}
	checkProvisionedR3(t, ctx, admin)
	leader := streamLeader(t, ctx, admin, admin.Names().Events, 2)

	// The loop connects to the leader first: killing it takes away the
	// loop's server and the stream's leader at once.
	nc := connect(t, c.URLs(leader), nats.DontRandomize())
	if got := nc.ConnectedServerName(); got != leader {
		t.Fatalf("loop connected to %s, want the leader %s", got, leader)
	}
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "ha", SessionID: "s1", Prompt: "time and sum?"}
	var killed time.Time
	em := &faultEmitter{Emitter: newBus(t, nc), at: toolCall(events.StageToolBefore, "call_2_1"), fault: func() {
		waitFor(t, 30*time.Second, func() bool {
			return has(runEventsOf(ctx, admin, req.RunID), req.RunID, events.StageToolAfter, 1)
		}, "step 1's tool.after in the stream")
		killed = time.Now()
		c.Server(leader).Shutdown()
		c.Server(leader).WaitForShutdown()
	}}
	eng, err := loop.New(loop.Config{Emitter: em, History: admin, Model: scripted.New(threeStepScript(300 * time.Millisecond)),
		Tools: tools.Builtin("")})
	if err != nil {
		t.Fatal(err)
	}
	res, runErr := eng.Run(ctx, req)
	recovered := time.Since(killed)
	if !em.fired.Load() {
		t.Fatal("the run never reached step 2's tool.before")
	}

	survivor := newBus(t, connect(t, c.URLs()))
	newLeader := streamLeader(t, ctx, survivor, survivor.Names().Events, 1)
	if newLeader == leader {
		t.Fatalf("leader still %s after it was shut down", leader)
	}
	t.Logf("leader %s killed with a write-ahead publish in flight: run ended %v later; new leader %s; loop now on %s",
		leader, recovered.Round(time.Millisecond), newLeader, nc.ConnectedServerName())

	evs := streamEvents(t, ctx, survivor)
	checkUniqueIDs(t, evs)
	runs := byRun(evs)
	if len(runs) != 1 {
		t.Fatalf("stream holds %d runs, want 1", len(runs))
	}
	revs := runs[req.RunID]
	rc := completed(t, checkRun(t, req.RunID, revs))
	if runErr != nil || rc.Reason != events.ReasonDone {
		t.Fatalf("run after the leader kill: %v (recorded: %s %s)\nstages: %s", runErr, rc.Reason, rc.Detail, stagesLine(revs))
	}
	before, after := toolCounts(t, revs)
	for _, id := range []string{"call_1_1", "call_2_1"} {
		if before[id] != 1 || after[id] != 1 {
			t.Errorf("tool call %s: %d tool.before, %d tool.after; want 1 each", id, before[id], after[id])
		}
	}
	if !strings.Contains(rc.Answer, "6*7 = 42") || !strings.Contains(rc.Answer, "It is 20") {
		t.Fatalf("answer %q lacks the tools' results", rc.Answer)
	}
	if res.Events != len(revs) {
		t.Fatalf("the loop counted %d events, the stream holds %d", res.Events, len(revs))
	}
	logOrder(t, revs)
}

// barrierModel holds the first n model calls until n are held at once.
// With one run at a time per worker and n workers, that proves each worker
// took one of the first n runs, without depending on who pulls first.
type barrierModel struct {
	loop.Model
	n       int32
	entered atomic.Int32
	once    sync.Once
	all     chan struct{}
}

func (m *barrierModel) Generate(ctx context.Context, req *loop.ModelRequest) (*loop.ModelResponse, error) {
	if req.Step == 1 {
		if k := m.entered.Add(1); k <= m.n {
			if k == m.n {
				m.once.Do(func() { close(m.all) })
			}
			select {
			case <-m.all:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	return m.Model.Generate(ctx, req)
}

// Two workers, connected to two different nodes of the cluster, share the
// R3 run queue: every submitted run completes exactly once, and both
// workers ran some.
func TestClusterWorkersShareRunQueue(t *testing.T) {
	const nRuns = 20
	ctx := testCtx(t, 2*time.Minute)
	c := bustest.StartCluster(t, 3)
	admin := newBus(t, connect(t, c.Servers[2].ClientURL()), bus.WithReplicas(3))
	if err := admin.Provision(ctx); err != nil {
		t.Fatalf("provision R3: %v", err)
	}
	streamLeader(t, ctx, admin, admin.Names().Runs, 2)

	model := &barrierModel{Model: scripted.New(nil), n: 2, all: make(chan struct{})}
	workers := make([]*runs.Consumer, 2)
	for i := range workers {
		nc := connect(t, c.Servers[i].ClientURL())
		wb := newBus(t, nc)
		eng, err := loop.New(loop.Config{Emitter: wb, History: wb, Model: model, Tools: tools.Builtin("")})
		if err != nil {
			t.Fatal(err)
		}
		rc, err := runs.New(wb).Consume(ctx, runs.ConsumerConfig{Agents: runs.Agents("pool"), Concurrency: 1, AckWait: 30 * time.Second}, queueHandler(eng))
		if err != nil {
			t.Fatalf("worker %d on %s: %v", i+1, nc.ConnectedServerName(), err)
		}
		t.Cleanup(func() {
			rc.Stop()
			<-rc.Closed()
		})
		workers[i] = rc
	}

	ids := make(map[string]bool, nRuns)
	for i := range nRuns {
		req := &events.RunRequest{RunID: events.NewID(), AgentID: "pool", SessionID: fmt.Sprintf("s%d", i), Prompt: "go"}
		if err := runs.New(admin).Submit(ctx, req); err != nil {
			t.Fatalf("submit run %d: %v", i, err)
		}
		ids[req.RunID] = true
	}
	waitFor(t, 90*time.Second, func() bool {
		return workers[0].Stats().Completed+workers[1].Stats().Completed == nRuns
	}, "%d runs completed; worker stats %+v and %+v", nRuns,
		lazy(func() string { return fmt.Sprintf("%+v", workers[0].Stats()) }),
		lazy(func() string { return fmt.Sprintf("%+v", workers[1].Stats()) }))
	s0, s1 := workers[0].Stats(), workers[1].Stats()
	t.Logf("worker on %s ran %d runs, worker on %s ran %d", c.Servers[0].Name(), s0.Completed, c.Servers[1].Name(), s1.Completed)
	if s0.Completed == 0 || s1.Completed == 0 {
		t.Fatalf("one worker ran every run: %+v, %+v", s0, s1)
	}
	if s0.Received != s0.Completed || s1.Received != s1.Completed {
		t.Fatalf("runs delivered more than once: %+v, %+v", s0, s1)
	}

	evs := streamEvents(t, ctx, admin)
	checkUniqueIDs(t, evs)
	byID := byRun(evs)
	if len(byID) != nRuns {
		t.Fatalf("stream holds %d runs, want %d", len(byID), nRuns)
	}
	for id, revs := range byID {
		if !ids[id] {
			t.Fatalf("stream holds run %s that was not submitted", id)
		}
		if rc := completed(t, checkRun(t, id, revs)); rc.Reason != events.ReasonDone || !strings.Contains(rc.Answer, "6*7 = 42") {
			t.Errorf("run %s: %s %q", id, rc.Reason, rc.Answer)
		}
	}
}

// queueHandler is eng's worker as the run queue's handler, as loop serve
// makes it: a lost run is left to the worker that holds it, one recorded on
// another definition handed off, any other error handed back.
func queueHandler(eng *loop.Engine) runs.Handler {
	w := loop.NewWorker(eng, nil)
	return func(ctx context.Context, req *events.RunRequest) (runs.Outcome, error) {
		err := w.Handle(ctx, req)
		var other *loop.DefinitionError
		switch {
		case errors.Is(err, loop.ErrLostRun):
			return runs.Outcome{Then: runs.Leave}, err
		case errors.As(err, &other):
			return runs.Outcome{Then: runs.HandOff, Definition: other.Recorded.Digest}, err
		}
		return runs.Outcome{}, err
	}
}
