package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/embedded"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/loop/tools"
)

// The only server is shut down mid-run and started again on the same port
// and store. The loop, connected over TCP, keeps publishing while it is
// down (the client buffers), its write-ahead tool.before waits for the
// server, and the run completes. Every event stored before the restart is
// still there after it; the run's events are each there once, seqs 1..N,
// no tool ran twice.
func TestRestartServerMidRun(t *testing.T) {
	ctx := testCtx(t, 2*time.Minute)
	addr, store := freeAddr(t), t.TempDir()
	startServer := func() *embedded.Server {
		t.Helper()
		srv, err := embedded.Start(ctx, embedded.Config{StoreDir: store, Listen: addr})
		if err != nil {
			t.Fatalf("start the server on %s: %v", addr, err)
		}
		t.Cleanup(srv.Shutdown)
		return srv
	}
	srv := startServer()
	url := srv.ClientURL()
	admin := newBus(t, connect(t, url))
	if err := admin.Provision(ctx); err != nil {
		t.Fatal(err)
	}

	req := &events.RunRequest{RunID: events.NewID(), AgentID: "restart", SessionID: "s1", Prompt: "time and sum?"}
	var stored []*events.Event // in the stream when the server went down
	var down time.Time
	// The server goes down as step 2 starts (its step.started is queued on
	// the connection), once step 1's tool.after is stored.
	em := &faultEmitter{Emitter: newBus(t, connect(t, url)),
		at: func(e *events.Event) bool { return e.Stage == events.StageStepStarted && e.Step == 2 },
		fault: func() { // on the loop's goroutine: no t.Fatal here
			if !bustest.Poll(ctx, 30*time.Second, 5*time.Millisecond, func() bool {
				stored = runEventsOf(ctx, admin, req.RunID)
				return has(stored, req.RunID, events.StageToolAfter, 1)
			}) {
				t.Errorf("step 1's tool.after not in the stream within 30s")
			}
			srv.Shutdown()
			down = time.Now()
		}}
	eng, err := loop.New(loop.Config{Emitter: em, History: admin, Model: scripted.New(threeStepScript(300 * time.Millisecond)),
		Tools: tools.Builtin("")})
	if err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		res *loop.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := eng.Run(ctx, req)
		done <- outcome{res, err}
	}()

	// While the server is down the loop gets as far as step 2's model reply
	// (appended asynchronously), and waits before the write-ahead
	// tool.before until everything before it is stored.
	waitFor(t, 60*time.Second, func() bool {
		e := em.last.Load()
		return e != nil && e.Stage == events.StageModelResponded && e.Step == 2
	}, "the loop to reach step 2's model reply with the server down")
	srv = startServer()
	restarted := time.Now()
	var out outcome
	select {
	case out = <-done:
	case <-ctx.Done():
		t.Fatal("the run did not end after the restart")
	}
	t.Logf("server down %v; the run ended %v after the restart", restarted.Sub(down).Round(time.Millisecond), time.Since(restarted).Round(time.Millisecond))

	evs := streamEvents(t, ctx, admin)
	checkUniqueIDs(t, evs)
	ids := map[string]bool{}
	for _, e := range evs {
		ids[e.ID] = true
	}
	for _, e := range stored {
		if !ids[e.ID] {
			t.Errorf("event %s (%s, seq %d), stored before the restart, is gone", e.ID, e.Stage, e.Seq)
		}
	}
	revs := byRun(evs)[req.RunID]
	rc := completed(t, checkRun(t, req.RunID, revs))
	if out.err != nil || rc.Reason != events.ReasonDone {
		t.Fatalf("run across the restart: %v (recorded: %s %s)\nstages: %s", out.err, rc.Reason, rc.Detail, stagesLine(revs))
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
	if len(stored) == 0 || out.res.Events != len(revs) {
		t.Fatalf("%d events stored before the restart; the loop counted %d events, the stream holds %d", len(stored), out.res.Events, len(revs))
	}
	logOrder(t, revs)
}
