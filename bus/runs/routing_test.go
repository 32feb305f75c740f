package runs_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// digestOf makes a definition digest for a test.
func digestOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// defined is agent id served on the definition named name (its digest
// derived from it) at version.
func defined(id, name, version string) runs.ServedAgent {
	return runs.ServedAgent{ID: id, Definition: events.Definition{Digest: digestOf(name), Name: id, Version: version}, Source: "test"}
}

// recorder is a run handler that records the requests it ran.
type recorder struct {
	mu  sync.Mutex
	got []*events.RunRequest
}

func (r *recorder) handle(_ context.Context, req *events.RunRequest) (runs.Outcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, req)
	return runs.Outcome{}, nil
}

func (r *recorder) runs() []*events.RunRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*events.RunRequest(nil), r.got...)
}

func consume(t *testing.T, b *bus.Bus, cfg runs.ConsumerConfig, h runs.Handler) *runs.Consumer {
	t.Helper()
	cfg.PollWait = 200 * time.Millisecond
	if cfg.Heartbeat == 0 {
		cfg.Heartbeat = 200 * time.Millisecond
	}
	rc, err := runs.New(b).Consume(testCtx(t), cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rc.Stop()
		<-rc.Closed()
	})
	return rc
}

// Workers serving different agents on one bus: each receives only its
// agents' requests, and every request runs once.
func TestRunsGoOnlyToTheWorkersOfTheirAgent(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	var ops, demo recorder
	consume(t, b, runs.ConsumerConfig{Agents: runs.Agents("ops"), Concurrency: 2}, ops.handle)
	consume(t, b, runs.ConsumerConfig{Agents: runs.Agents("demo"), Concurrency: 2}, demo.handle)
	for i := 0; i < 12; i++ {
		agent := "demo"
		if i%3 == 0 {
			agent = "ops"
		}
		if err := runs.New(b).Submit(ctx, runReq(agent, fmt.Sprintf("r%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	bustest.Eventuallyf(t, 15*time.Second, func() bool { return len(ops.runs())+len(demo.runs()) == 12 }, "12 runs handled")
	for name, r := range map[string]*recorder{"ops": &ops, "demo": &demo} {
		seen := map[string]bool{}
		for _, req := range r.runs() {
			if req.AgentID != name || seen[req.RunID] {
				t.Fatalf("the %s worker got run %s of agent %s (twice: %v)", name, req.RunID, req.AgentID, seen[req.RunID])
			}
			seen[req.RunID] = true
		}
	}
	if len(ops.runs()) != 4 {
		t.Fatalf("ops ran %d runs, want 4", len(ops.runs()))
	}
	bustest.Eventuallyf(t, 5*time.Second, func() bool { return queued(t, b) == 0 }, "queue empty")
}

// A request for an agent no worker serves stays queued, listed with what it
// waits for; a worker for the agent started later runs it.
func TestARequestNobodyServesWaitsForAWorker(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	consume(t, b, runs.ConsumerConfig{Agents: runs.Agents("demo")}, (&recorder{}).handle)
	if err := runs.New(b).Submit(ctx, runReq("ghost", "g1")); err != nil {
		t.Fatal(err)
	}
	list, truncated, err := runs.New(b).List(ctx, "")
	if err != nil || truncated || len(list) != 1 {
		t.Fatalf("queued: %+v %v %v", list, truncated, err)
	}
	q := list[0]
	if q.RunID != "g1" || q.AgentID != "ghost" || q.SessionID != "s-g1" || q.Taken || q.Definition != "" || q.Queued.IsZero() {
		t.Fatalf("queued request %+v", q)
	}
	view, err := runs.NewFleet(b).View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if why := view.WaitingFor("ghost", ""); why != "no worker serves agent ghost" {
		t.Fatalf("waiting for %q", why)
	}
	if why := view.WaitingFor("demo", ""); why != "" {
		t.Fatalf("demo is served, but: %q", why)
	}
	var ghost recorder
	consume(t, b, runs.ConsumerConfig{Agents: runs.Agents("ghost")}, ghost.handle)
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return len(ghost.runs()) == 1 }, "the ghost run taken once a worker serves ghost")
}

// Each served agent has its own consumers, named after the pool, agent and
// definition, whose filters do not overlap: a work queue allows no overlap.
func TestConsumersPerAgentAndDefinition(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	a := defined("ops", "ops-1", "1")
	consume(t, b, runs.ConsumerConfig{Agents: []runs.ServedAgent{a, {ID: "demo"}}}, (&recorder{}).handle)
	// A second worker of the same pool shares them.
	consume(t, b, runs.ConsumerConfig{Agents: []runs.ServedAgent{a}}, (&recorder{}).handle)
	st, err := b.JetStream().Stream(ctx, b.Names().Runs)
	if err != nil {
		t.Fatal(err)
	}
	filters := map[string]string{}
	for ci := range st.ListConsumers(ctx).Info() {
		filters[ci.Name] = ci.Config.FilterSubject
	}
	d := a.Definition.Digest
	want := map[string]string{
		"hookbus-workers-run-ops":      "hookbus.run.ops",
		"hookbus-workers-run-ops-" + d: "hookbus.run.ops." + d,
		"hookbus-workers-run-demo":     "hookbus.run.demo",
	}
	if len(filters) != len(want) {
		t.Fatalf("consumers %v, want %v", filters, want)
	}
	for name, f := range want {
		if filters[name] != f {
			t.Fatalf("consumer %s filters %q, want %q (all: %v)", name, filters[name], f, filters)
		}
	}
	runs, pinned := runs.ConsumerNames(runs.DefaultDurable, "a/b", "")
	if strings.ContainsAny(runs+pinned, "/.") || pinned != "" {
		t.Fatalf("consumer names of an agent with a '/': %q %q", runs, pinned)
	}
}

// A worker serving several agents shares its Concurrency slots between
// them, and pulls only when a slot is free: with 2 slots and 9 requests of
// 3 agents, 2 run at once and no more are held by the worker meanwhile.
func TestSlotsAreSharedAcrossAgents(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	for _, agent := range []string{"a", "b", "c"} {
		for i := 0; i < 3; i++ {
			if err := runs.New(b).Submit(ctx, runReq(agent, fmt.Sprintf("%s%d", agent, i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	release := make(chan struct{})
	var inflight, peak atomic.Int32
	var mu sync.Mutex
	agents := map[string]int{}
	rc := consume(t, b, runs.ConsumerConfig{Agents: runs.Agents("a", "b", "c"), Concurrency: 2}, func(ctx context.Context, req *events.RunRequest) (runs.Outcome, error) {
		cur := inflight.Add(1)
		defer inflight.Add(-1)
		for p := peak.Load(); cur > p && !peak.CompareAndSwap(p, cur); p = peak.Load() {
		}
		mu.Lock()
		agents[req.AgentID]++
		mu.Unlock()
		select {
		case <-release:
		case <-ctx.Done():
			return runs.Outcome{}, ctx.Err()
		}
		return runs.Outcome{}, nil
	})
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return inflight.Load() == 2 }, "two runs under way")
	// Held requests are those delivered and not acknowledged, on every
	// agent's consumer: exactly the two running.
	st, err := b.JetStream().Stream(ctx, b.Names().Runs)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		held := 0
		for ci := range st.ListConsumers(ctx).Info() {
			held += ci.NumAckPending
		}
		if held != 2 || rc.Stats().Received != 2 {
			t.Fatalf("the worker holds %d requests (received %d) with 2 slots", held, rc.Stats().Received)
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(release)
	bustest.Eventuallyf(t, 15*time.Second, func() bool { return rc.Stats().Completed == 9 }, "every run completed")
	if p := peak.Load(); p != 2 {
		t.Fatalf("peak %d runs at once, want 2", p)
	}
	if agents["a"] != 3 || agents["b"] != 3 || agents["c"] != 3 {
		t.Fatalf("runs by agent %v", agents)
	}
}

// The first worker to serve an agent registers its definition; a worker
// with another definition of the same version takes none of the agent's
// new runs (only runs pinned to its own), until one with a newer version
// replaces the registered definition: the others then stop taking new runs.
func TestTheRegisteredDefinitionTakesNewRuns(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	var r1, r2, r3 recorder
	w1 := consume(t, b, runs.ConsumerConfig{Agents: []runs.ServedAgent{defined("ops", "one", "1")}, Worker: "w1"}, r1.handle)
	w2 := consume(t, b, runs.ConsumerConfig{Agents: []runs.ServedAgent{defined("ops", "two", "1")}, Worker: "w2"}, r2.handle)
	reg, _, err := runs.NewFleet(b).Definition(ctx, "ops")
	if err != nil || reg == nil || reg.Digest != digestOf("one") || reg.RegisteredBy != "w1" || reg.Source != "test" {
		t.Fatalf("registered %+v, %v; want w1's", reg, err)
	}
	if r := w2.Routes()[0]; r.NewRuns || r.Registered == nil || r.Registered.Digest != digestOf("one") {
		t.Fatalf("w2's route %+v: another definition is registered", r)
	}
	if r := w1.Routes()[0]; !r.NewRuns {
		t.Fatalf("w1's route %+v", r)
	}
	for i := 0; i < 4; i++ {
		if err := runs.New(b).Submit(ctx, runReq("ops", fmt.Sprintf("new%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	// A resumption pinned to w2's definition goes to w2.
	pinned := runReq("ops", "pinned")
	pinned.Resume, pinned.Prompt, pinned.Definition = true, "", digestOf("two")
	if err := runs.New(b).Resume(ctx, pinned, "resume.pinned"); err != nil {
		t.Fatal(err)
	}
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return len(r1.runs()) == 4 && len(r2.runs()) == 1 }, "new runs on w1, the pinned one on w2")
	if got := r2.runs()[0]; got.RunID != "pinned" || got.Definition != digestOf("two") {
		t.Fatalf("w2 ran %+v", got)
	}

	// Version 2 replaces it; w1 then leaves the new runs to w3.
	w3 := consume(t, b, runs.ConsumerConfig{Agents: []runs.ServedAgent{defined("ops", "three", "2")}, Worker: "w3"}, r3.handle)
	if r := w3.Routes()[0]; !r.NewRuns {
		t.Fatalf("a newer version did not replace the registered definition: %+v", r)
	}
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return !w1.Routes()[0].NewRuns }, "w1 to see the new definition")
	for i := 0; i < 3; i++ {
		if err := runs.New(b).Submit(ctx, runReq("ops", fmt.Sprintf("later%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return len(r3.runs()) == 3 }, "new runs on w3")
	if len(r1.runs()) != 4 || len(r2.runs()) != 1 {
		t.Fatalf("after the replacement w1 ran %d, w2 %d", len(r1.runs()), len(r2.runs()))
	}
	// Replace makes a definition the registered one whatever its version.
	w4 := consume(t, b, runs.ConsumerConfig{Agents: []runs.ServedAgent{{ID: "ops", Definition: events.Definition{Digest: digestOf("four")}, Replace: true}}}, (&recorder{}).handle)
	if !w4.Routes()[0].NewRuns {
		t.Fatal("Replace did not replace the registered definition")
	}
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return !w3.Routes()[0].NewRuns }, "w3 to see the replacement")
}

// A worker serving an agent without a definition takes its runs only while
// no definition of the agent is registered.
func TestAWorkerWithoutDefinitionLeavesADefinedAgent(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	var plain, def recorder
	w := consume(t, b, runs.ConsumerConfig{Agents: runs.Agents("ops")}, plain.handle)
	if !w.Routes()[0].NewRuns {
		t.Fatal("no definition registered: the plain worker should take ops' runs")
	}
	consume(t, b, runs.ConsumerConfig{Agents: []runs.ServedAgent{defined("ops", "one", "")}}, def.handle)
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return !w.Routes()[0].NewRuns }, "the plain worker to leave ops")
	for i := 0; i < 3; i++ {
		if err := runs.New(b).Submit(ctx, runReq("ops", fmt.Sprintf("r%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return len(def.runs()) == 3 }, "ops' runs on its definition")
	if len(plain.runs()) != 0 {
		t.Fatalf("the plain worker ran %d runs of a defined agent", len(plain.runs()))
	}
}

// A HandOff queues the request again, pinned to the definition it names,
// and acknowledges the original: not a delivery attempt (MaxDeliver 1 does
// not drop it), nothing lost; the definition's worker then runs it.
func TestAHandoffQueuesTheRequestPinned(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	old := digestOf("old")
	w := consume(t, b, runs.ConsumerConfig{Agents: []runs.ServedAgent{defined("ops", "new", "")}, MaxDeliver: 1},
		func(_ context.Context, req *events.RunRequest) (runs.Outcome, error) {
			if req.Definition == "" {
				return runs.Outcome{Then: runs.HandOff, Definition: old}, errors.New("recorded on " + old)
			}
			return runs.Outcome{}, nil
		})
	req := runReq("ops", "crashed")
	req.Resume, req.Prompt = true, ""
	if err := runs.New(b).Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	var list []runs.Pending
	bustest.Eventuallyf(t, 10*time.Second, func() bool {
		var err error
		list, _, err = runs.New(b).List(ctx, "ops")
		return err == nil && len(list) == 1 && list[0].Definition == old && w.Stats().HandedOff == 1
	}, "the request queued again for definition old: %+v", list)
	if st := w.Stats(); st.HandedOff != 1 || st.Dropped != 0 || st.Failed != 0 || st.Completed != 0 {
		t.Fatalf("stats %+v", st)
	}
	if q := list[0]; q.RunID != "crashed" || !q.Resume || q.Subject != "hookbus.run.ops."+old {
		t.Fatalf("queued %+v", q)
	}
	view, err := runs.NewFleet(b).View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if why := view.WaitingFor("ops", old); why != "no worker has definition "+old[:12]+" of agent ops" {
		t.Fatalf("waiting for %q", why)
	}
	var r recorder
	consume(t, b, runs.ConsumerConfig{Agents: []runs.ServedAgent{defined("ops", "old", "")}}, r.handle)
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return len(r.runs()) == 1 }, "the old definition's worker to run it")
	if got := r.runs()[0]; got.RunID != "crashed" || got.Definition != old {
		t.Fatalf("ran %+v", got)
	}
}

// A request whose body names another definition than its subject's is
// refused, as one naming another agent is.
func TestAPinnedRequestMustMatchItsSubject(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	a := defined("ops", "one", "")
	rc := consume(t, b, runs.ConsumerConfig{Agents: []runs.ServedAgent{a}}, (&recorder{}).handle)
	body := fmt.Sprintf(`{"run_id":"x1","agent_id":"ops","session_id":"s","resume":true,"definition":%q}`, digestOf("other"))
	if _, err := b.JetStream().Publish(ctx, "hookbus.run.ops."+a.Definition.Digest, []byte(body)); err != nil {
		t.Fatal(err)
	}
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return rc.Stats().Refused == 1 }, "the request refused")
	if err := runs.New(b).Submit(ctx, &events.RunRequest{RunID: "x2", AgentID: "ops", SessionID: "s", Prompt: "p", Definition: "nothex"}); !errors.Is(err, events.ErrInvalidID) {
		t.Fatalf("a bad definition digest: %v", err)
	}
}

// An agent whose definition adopts runs recorded on others takes, while it
// is the registered one, the runs pinned to the agent's other definitions.
func TestAnAdoptingDefinitionTakesOtherDefinitionsRuns(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	a := defined("ops", "new", "2")
	a.Adopt = true
	var r recorder
	w := consume(t, b, runs.ConsumerConfig{Agents: []runs.ServedAgent{a}}, r.handle)
	if rt := w.Routes()[0]; !rt.NewRuns || !rt.Adopts {
		t.Fatalf("route %+v", rt)
	}
	req := runReq("ops", "waiting")
	req.Resume, req.Prompt, req.Definition = true, "", digestOf("old")
	if err := runs.New(b).Resume(ctx, req, "resume.waiting"); err != nil {
		t.Fatal(err)
	}
	bustest.Eventuallyf(t, 15*time.Second, func() bool { return len(r.runs()) == 1 }, "the adopting worker to take the pinned run")
	if got := r.runs()[0]; got.Definition != digestOf("old") {
		t.Fatalf("ran %+v", got)
	}
	view, err := runs.NewFleet(b).View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if why := view.WaitingFor("ops", digestOf("old")); why != "" {
		t.Fatalf("an adopting worker serves the old definition's runs, but: %q", why)
	}
}

// The consumer of every agent an older hookbus made overlaps the per-agent
// consumers: idle, it is removed (its requests stay queued and run); in
// use, the worker refuses to start, naming it and how to remove it.
func TestTheLegacyConsumerIsRemovedWhenIdle(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	legacy := func() jetstream.Consumer {
		c, err := b.JetStream().CreateOrUpdateConsumer(ctx, b.Names().Runs, jetstream.ConsumerConfig{
			Durable: runs.DefaultDurable, FilterSubject: "hookbus.run.>", AckPolicy: jetstream.AckExplicitPolicy})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := legacy()
	// In use: an older worker's pull waits on it.
	pulled := make(chan error, 1)
	go func() {
		batch, err := c.Fetch(1, jetstream.FetchMaxWait(2*time.Second))
		if err == nil {
			for range batch.Messages() {
				err = errors.New("the older worker's pull got a request")
			}
		}
		pulled <- err
	}()
	bustest.Eventuallyf(t, 5*time.Second, func() bool {
		ci, err := c.Info(ctx)
		return err == nil && (ci.NumWaiting > 0 || ci.NumAckPending > 0)
	}, "the older worker's pull")
	_, err := runs.New(b).Consume(ctx, runs.ConsumerConfig{Agents: runs.Agents("demo")}, (&recorder{}).handle)
	if !errors.Is(err, runs.ErrLegacyConsumer) || !strings.Contains(err.Error(), "nats consumer rm HOOKBUS_RUNS hookbus-workers") {
		t.Fatalf("a worker next to an older one in use: %v", err)
	}
	if err := <-pulled; err != nil {
		t.Fatal(err)
	}
	bustest.Eventuallyf(t, 10*time.Second, func() bool {
		ci, err := c.Info(ctx)
		return err == nil && ci.NumWaiting == 0 && ci.NumAckPending == 0
	}, "the older worker gone")
	if err := runs.New(b).Submit(ctx, runReq("demo", "before")); err != nil {
		t.Fatal(err)
	}
	var r recorder
	consume(t, b, runs.ConsumerConfig{Agents: runs.Agents("demo")}, r.handle)
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return len(r.runs()) == 1 }, "the request queued before to run")
	if _, err := b.JetStream().Consumer(ctx, b.Names().Runs, runs.DefaultDurable); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("the older consumer: %v, want it removed", err)
	}
}

// A worker is in the workers bucket while it runs, with what it serves,
// and leaves it when it stops; queued requests a worker holds are marked
// taken.
func TestPresenceAndTakenRequests(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	release := make(chan struct{})
	w, err := runs.New(b).Consume(ctx, runs.ConsumerConfig{Agents: []runs.ServedAgent{defined("ops", "one", "3")}, Worker: "here:1",
		PollWait: 200 * time.Millisecond, Concurrency: 3}, func(ctx context.Context, _ *events.RunRequest) (runs.Outcome, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return runs.Outcome{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := runs.NewFleet(b).Workers(ctx)
	if err != nil || len(ws) != 1 {
		t.Fatalf("workers %+v, %v", ws, err)
	}
	if p := ws[0]; p.ID != w.Worker() || p.Name != "here:1" || p.Concurrency != 3 || len(p.Agents) != 1 ||
		p.Agents[0].Agent != "ops" || !p.Agents[0].NewRuns || p.Agents[0].Definition.Version != "3" {
		t.Fatalf("presence %+v", p)
	}
	if err := runs.New(b).Submit(ctx, runReq("ops", "held")); err != nil {
		t.Fatal(err)
	}
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return w.Stats().Received == 1 }, "the run taken")
	list, _, err := runs.New(b).List(ctx, "ops")
	if err != nil || len(list) != 1 || !list[0].Taken {
		t.Fatalf("queued %+v, %v: the held request should be marked taken", list, err)
	}
	close(release)
	w.Stop()
	<-w.Closed()
	ws, err = runs.NewFleet(b).Workers(ctx)
	if err != nil || len(ws) != 0 {
		t.Fatalf("workers after the stop: %+v, %v", ws, err)
	}
}

func TestNewerVersion(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"2", "1", true}, {"1.10", "1.9", true}, {"v2", "1.9.9", true}, {"1.0", "1", false}, {"1", "1.0.0", false},
		{"1", "2", false}, {"", "1", false}, {"2", "", false}, {"2-beta", "1", false}, {"two", "one", false}, {"1.", "1", false},
	} {
		if got := runs.NewerVersion(tc.a, tc.b); got != tc.want {
			t.Errorf("NewerVersion(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// A hand-off repeated after its acknowledgement was lost (the pinned copy
// already queued under the original's de-duplication id) queues nothing
// more and counts as no second hand-off; the original is acknowledged.
func TestARepeatedHandoffIsQueuedOnce(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	old := digestOf("old")
	req := runReq("ops", "crashed")
	req.Resume, req.Prompt = true, ""
	if err := runs.New(b).Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	st, err := b.JetStream().Stream(ctx, b.Names().Runs)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pinned := *req
	pinned.Definition = old
	body, err := json.Marshal(&pinned)
	if err != nil {
		t.Fatal(err)
	}
	// The copy an earlier delivery's hand-off queued before its ack was lost.
	first := &nats.Msg{Subject: "hookbus.run.ops." + old, Data: body,
		Header: nats.Header{jetstream.MsgIDHeader: []string{"handoff." + b.Names().Runs + "." + strconv.FormatUint(info.State.LastSeq, 10)}}}
	if _, err := b.JetStream().PublishMsg(ctx, first); err != nil {
		t.Fatal(err)
	}
	w := consume(t, b, runs.ConsumerConfig{Agents: []runs.ServedAgent{defined("ops", "new", "")}},
		func(_ context.Context, req *events.RunRequest) (runs.Outcome, error) {
			return runs.Outcome{Then: runs.HandOff, Definition: old}, errors.New("recorded on " + old)
		})
	var list []runs.Pending
	bustest.Eventuallyf(t, 10*time.Second, func() bool {
		list, _, err = runs.New(b).List(ctx, "ops")
		return err == nil && len(list) == 1 && list[0].Definition == old
	}, "the original acknowledged, its one pinned copy left: %+v", list)
	if st := w.Stats(); st.HandedOff != 0 || st.Failed != 0 || st.Dropped != 0 {
		t.Fatalf("stats %+v: a hand-off the stream already held is no second hand-off", st)
	}
}
