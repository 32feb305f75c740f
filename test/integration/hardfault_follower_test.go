package integration

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
)

// A session's reads see every event stored before they began, whichever
// replica the server serves them from. Three nats-server processes, the
// events stream R3; one follower is SIGKILLed while 20 MB of a session
// are written (the leader snapshots its log, so the follower must catch up
// from the stream), and started again. While it catches up, and a writer goes on appending to
// the session (each event acknowledged by the leader and the other
// follower), a reader again and again notes how many events were
// acknowledged, then reads the session (SessionEvents, as a worker does
// before and after it claims it; four readers at once): every read holds at least those, in seq
// order, with no gap. A read whose consumer the server placed on the
// catching-up follower used to end early with what that follower held.
func TestFaultSessionReadsFromASlowFollower(t *testing.T) {
	hardFaults(t)
	ctx := testCtx(t, 5*time.Minute)
	nodes := startNATSCluster(t, 3)
	urls := clusterURLs(nodes)
	admin := adminBus(t, ctx, urls, 3)
	checkProvisionedR3(t, ctx, admin)
	leader := streamLeader(t, ctx, admin, admin.Names().Events, 2)
	var slow *natsNode
	for _, n := range nodes {
		if n.name != leader {
			slow = n
			break
		}
	}
	// The clients connect to the two other nodes: what is tested is where
	// the server serves a read from, not a client stuck on a stopped node.
	var others []*natsNode
	for _, n := range nodes {
		if n != slow {
			others = append(others, n)
		}
	}
	writer := newBus(t, connect(t, clusterURLs(others), nats.Name("hookbus-writer")), bus.WithReplicas(3))
	reader := newBus(t, connect(t, clusterURLs(others), nats.Name("hookbus-reader")), bus.WithReplicas(3))

	const agent, session = "demo", "slow-follower"
	run := events.NewID()
	var acked atomic.Uint64
	for seq := uint64(1); seq <= 200; seq++ { // a session of some length first
		if err := writer.PublishSync(ctx, bustest.Event(t, agent, session, run, events.StageToolAfter, seq)); err != nil {
			t.Fatal(err)
		}
		acked.Store(seq)
	}

	// The follower misses a stretch of the session, then comes back: its
	// cluster state is current at once (it is small), the stream's
	// catch-up takes a while.
	slow.kill(t)
	for seq := acked.Load() + 1; seq <= 20000; seq++ {
		if err := writer.Publish(ctx, bustest.SizedEvent(t, agent, session, run, seq, 1024)); err != nil {
			t.Fatal(err)
		}
		acked.Store(seq)
	}
	if err := writer.Flush(ctx, run); err != nil {
		t.Fatal(err)
	}
	slow.start(t)

	wctx, stopWriting := context.WithCancel(ctx)
	defer stopWriting()
	writing := make(chan error, 1)
	go func() {
		for seq := acked.Load() + 1; wctx.Err() == nil; seq++ {
			if err := writer.PublishSync(wctx, bustest.Event(t, agent, session, run, events.StageToolAfter, seq)); err != nil {
				if wctx.Err() != nil {
					break
				}
				writing <- fmt.Errorf("event %d: %w", seq, err)
				return
			}
			acked.Store(seq)
		}
		writing <- nil
	}()

	// Four readers at once, ten reads each: most land while the follower
	// catches up.
	const readers, reads = 4, 10
	var (
		mu            sync.Mutex
		short, failed int
		wg            sync.WaitGroup
	)
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range reads {
				want := acked.Load()
				evs, err := reader.SessionEvents(ctx, agent, session)
				mu.Lock()
				switch {
				case err != nil:
					failed++ // a read that cannot reach the leader's last event says so
					t.Logf("reader %d, read %d: %v", r, i, err)
				case uint64(len(evs)) < want:
					short++
					t.Errorf("reader %d, read %d: %d events, while %d were acknowledged before it began", r, i, len(evs), want)
				}
				mu.Unlock()
				for j, e := range evs {
					if e.Seq != uint64(j+1) {
						t.Errorf("reader %d, read %d: event %d has seq %d", r, i, j, e.Seq)
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	stopWriting()
	if err := <-writing; err != nil {
		t.Fatal(err)
	}
	if failed > readers*reads/4 {
		t.Fatalf("%d of %d reads failed: the reads must succeed once a replica or the leader serves them", failed, readers*reads)
	}
	t.Logf("%d reads, %d short, %d failed; %d events written; catching-up follower %s", readers*reads, short, failed, acked.Load(), slow.name)
}

// Answered approvals always lead to a resumption, whichever replica serves
// the reads. Three nats-server processes, two workers; 20 runs (a session each) wait for a person's approval of a
// call. A follower of the events stream is SIGKILLed while 12 MB are
// written on other sessions, and started again; while it catches up, all
// 20 calls are approved (observer approve, processes). Every run resumes,
// runs its approved call once and ends done. A stale read used to make the
// resumer acknowledge an answer without queueing its run, or the resumed
// attempt miss the answer and end waiting again.
func TestFaultApprovalsResumeWhileAFollowerCatchesUp(t *testing.T) {
	hardFaults(t)
	ctx := testCtx(t, 8*time.Minute)
	nodes := startNATSCluster(t, 3)
	urls := clusterURLs(nodes)
	admin := adminBus(t, ctx, urls, 3)
	checkProvisionedR3(t, ctx, admin)
	agents := approvalAgents(t, "1h", "deny")
	ws := []*worker{
		startWorker(t, "--nats", urls, "--replicas", "3", "--agents", agents),
		startWorker(t, "--nats", urls, "--replicas", "3", "--agents", agents),
	}
	const n = 20
	ids := submitRuns(t, ctx, admin, "ops", "approve-", "what is 6*7?", n)
	waitEvery(t, 3*time.Minute, 250*time.Millisecond, func() bool {
		waiting := 0
		for _, id := range ids {
			if evs := runEventsOf(ctx, admin, id); stageCount(evs, events.StageApprovalRequested) == 1 {
				waiting++
			}
		}
		return waiting == n
	}, "%d runs to ask for approval%s", n, lazy(func() string { return workerLogs(ws) }))

	leader := streamLeader(t, ctx, admin, admin.Names().Events, 2)
	var slow *natsNode
	for _, node := range nodes {
		if node.name != leader {
			slow = node
			break
		}
	}
	slow.kill(t)
	filler := newBus(t, connect(t, urls, nats.Name("hookbus-filler")), bus.WithReplicas(3))
	fill := events.NewID()
	for seq := uint64(1); seq <= 12000; seq++ {
		if err := filler.Publish(ctx, bustest.SizedEvent(t, "filler", "f", fill, seq, 1024)); err != nil {
			t.Fatal(err)
		}
	}
	if err := filler.Flush(ctx, fill); err != nil {
		t.Fatal(err)
	}
	slow.start(t)

	for _, id := range ids {
		if a := run(t, "observer", "approve", id, "--nats", urls); a.code != 0 {
			t.Fatalf("observer approve %s: %d\n%s\n%s", id, a.code, a.stdout, a.stderr)
		}
	}
	waitEnded(t, ctx, admin, "ops", n, 3*time.Minute, ws...)
	for _, id := range ids {
		evs := runEventsOf(ctx, admin, id)
		calc := 0
		for _, e := range evs {
			if e.Stage == events.StageToolAfter {
				if p, err := events.Data[events.ToolAfter](e); err == nil && p.Call.Name == "calculator" {
					calc++
				}
			}
		}
		end := checkRun(t, id, evs)
		if rc := completed(t, end); rc.Reason != events.ReasonDone || calc != 1 {
			t.Fatalf("run %s ended %+v with the calculator run %d times; want done, once\n%s", id, rc, calc, stagesLine(evs))
		}
		if stageCount(evs, events.StageApprovalRequested) != 1 {
			t.Fatalf("run %s asked %d times\n%s", id, stageCount(evs, events.StageApprovalRequested), stagesLine(evs))
		}
	}
}
