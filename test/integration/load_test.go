package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/loop/tools"
	"github.com/nats-io/nats.go/jetstream"
)

// loadScript is short, so that 200 runs stay quick under the race
// detector: one calculator call, then the answer.
var loadScript = &scripted.Script{Name: "load", Replies: []scripted.Reply{
	{Content: "Working it out.", ToolCalls: []scripted.ToolCall{{Name: "calculator", Arguments: json.RawMessage(`{"expression":"6*7"}`)}}},
	{Content: "6*7 = {{tool:calculator}}"},
}}

// Events of one run of loadScript with the three interceptors: intake,
// run.started, 2 × (hook.decided, step.started, context.assembled,
// model.responded), hook.decided, tool.before, tool.result (the raw
// result, recorded before the tool.after interceptor runs), hook.decided,
// tool.after, step.completed (step 1 only), step.completed, stop,
// run.completed.
const (
	loadDecidedPerRun = 4 // step.started twice, tool.before, tool.after
	loadEventsPerRun  = 15 + loadDecidedPerRun
)

// latencies collects observed event latencies.
type latencies struct {
	mu  sync.Mutex
	d   []time.Duration
	ids map[string]int
}

func (l *latencies) add(e *events.Event, d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.ids[e.ID]++
	l.mu.Unlock()
}

func (l *latencies) distinct() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ids)
}

// percentiles returns the p50 and p99 of what was observed.
func (l *latencies) percentiles() (p50, p99 time.Duration, n int) {
	l.mu.Lock()
	d := slices.Clone(l.d)
	l.mu.Unlock()
	slices.Sort(d)
	if len(d) == 0 {
		return 0, 0, 0
	}
	return d[len(d)/2], d[len(d)*99/100], len(d)
}

// 200 runs at once on one worker (ConsumeRuns, concurrency 200), with
// three remote interceptors (micro services on their own connection,
// registered in the registry and followed with SyncHooks, as loop serve
// does): allow on step.started and tool.before, a JSON-patch modify on
// tool.after. Every run completes exactly once, every event of every run
// is in the stream once (seqs 1..N, ids unique, the expected count), one
// hook.decided per interceptor call and no hook.failed. It logs runs/s and
// the event latency a durable observer sees (received − ce-time).
func TestLoad200ConcurrentRunsWithRemoteInterceptors(t *testing.T) {
	const nRuns = 200
	ctx := testCtx(t, 2*time.Minute)
	srv, _ := bustest.Start(t)
	admin := bustest.Provision(t, bustest.Conn(t, srv))

	// The interceptors, and their registrations.
	icConn := bustest.Conn(t, srv)
	var served atomic.Int64
	allow := interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		served.Add(1)
		return nil, nil
	})
	annotate := interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		served.Add(1)
		return &interceptors.Decision{Kind: interceptors.Modify, Patch: []interceptors.PatchOp{
			{Op: "add", Path: "/context", Value: json.RawMessage(`"audited"`)},
		}}, nil
	})
	for _, p := range []struct {
		plugin string
		stage  events.Stage
		ic     interceptors.Interceptor
	}{
		{"pace", events.StageStepStarted, allow},
		{"guard", events.StageToolBefore, allow},
		{"audit", events.StageToolAfter, annotate},
	} {
		svc, err := remote.Serve(ctx, icConn, remote.ServeConfig{Plugin: p.plugin, Stages: []events.Stage{p.stage}}, p.ic)
		if err != nil {
			t.Fatalf("serve %s: %v", p.plugin, err)
		}
		t.Cleanup(func() { _ = svc.Stop() })
		// A generous timeout: this proves nothing is lost under load, not
		// how fast a starved CI core answers.
		if err := remote.NewRegistry(admin).Put(ctx, interceptors.Registration{Plugin: p.plugin, Stage: p.stage, Timeout: 20 * time.Second}); err != nil {
			t.Fatalf("register %s: %v", p.plugin, err)
		}
	}

	// The worker: the chain follows the registry, as in loop serve.
	wb := bustest.Provision(t, bustest.Conn(t, srv))
	trust, err := remote.WatchTrust(ctx, wb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(trust.Stop)
	chain := interceptors.NewChain(interceptors.WithTrust(trust))
	hs, err := remote.SyncHooks(ctx, wb, chain, trust)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hs.Stop)
	if err := hs.Synced(ctx); err != nil {
		t.Fatal(err)
	}
	for _, st := range []events.Stage{events.StageStepStarted, events.StageToolBefore, events.StageToolAfter} {
		if !chain.Has(st, "calculator", "load") {
			t.Fatalf("the chain has no interceptor on %s after SyncHooks", st)
		}
	}
	eng, err := loop.New(loop.Config{Emitter: wb, History: wb, Model: scripted.New(loadScript), Tools: tools.Builtin(""), Hooks: chain})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := runs.New(wb).Consume(ctx, runs.ConsumerConfig{Agents: runs.Agents("load"), Concurrency: nRuns, AckWait: time.Minute}, queueHandler(eng))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rc.Stop()
		<-rc.Closed()
	})

	// A durable observer, on its own connection, times every event.
	ob := bustest.Provision(t, bustest.Conn(t, srv))
	lat := &latencies{ids: map[string]int{}}
	var ended atomic.Int64
	var lastEnd atomic.Int64 // unix nanos of the last run.completed received
	obs, err := ob.Observe(ctx, bus.ObserveConfig{Durable: "load-latency"}, func(_ context.Context, e *events.Event) error {
		now := time.Now()
		lat.add(e, now.Sub(e.Time))
		if e.Stage == events.StageRunCompleted {
			ended.Add(1)
			lastEnd.Store(now.UnixNano())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(obs.Stop)

	ids := make(map[string]bool, nRuns)
	begin := time.Now()
	for i := range nRuns {
		req := &events.RunRequest{RunID: events.NewID(), AgentID: "load", SessionID: fmt.Sprintf("s%03d", i), Prompt: "what is 6*7?"}
		if err := runs.New(admin).Submit(ctx, req); err != nil {
			t.Fatalf("submit run %d: %v", i, err)
		}
		ids[req.RunID] = true
	}
	waitFor(t, 90*time.Second, func() bool { return rc.Stats().Completed == nRuns && ended.Load() >= nRuns },
		"%d runs completed; worker %s, observer saw %s run.completed", nRuns,
		lazy(func() string { return fmt.Sprintf("%+v", rc.Stats()) }), lazy(func() string { return fmt.Sprint(ended.Load()) }))
	elapsed := time.Unix(0, lastEnd.Load()).Sub(begin)

	evs := streamEvents(t, ctx, admin)
	checkUniqueIDs(t, evs)
	groups := byRun(evs)
	if len(groups) != nRuns {
		t.Fatalf("stream holds %d runs, want %d", len(groups), nRuns)
	}
	decided, failed := 0, 0
	for id, revs := range groups {
		if !ids[id] {
			t.Fatalf("stream holds run %s that was not submitted", id)
		}
		end := checkRun(t, id, revs)
		res := completed(t, end)
		if res.Reason != events.ReasonDone || !strings.HasPrefix(res.Answer, "6*7 = 42") || len(revs) != loadEventsPerRun || res.Events+1 != len(revs) {
			t.Errorf("run %s: %s %q, %d events (run.completed counts %d before it), want %d\n%s",
				id, res.Reason, res.Answer, len(revs), res.Events, loadEventsPerRun, stagesLine(revs))
		}
		for _, e := range revs {
			switch e.Stage {
			case events.StageHookDecided:
				decided++
			case events.StageHookFailed:
				failed++
			}
		}
	}
	if decided != nRuns*loadDecidedPerRun || failed != 0 || served.Load() != int64(decided) {
		t.Fatalf("hook.decided %d, hook.failed %d, interceptor calls %d; want %d, 0, %d", decided, failed, served.Load(), nRuns*loadDecidedPerRun, nRuns*loadDecidedPerRun)
	}
	if st := rc.Stats(); st.Received != nRuns || st.Failed != 0 {
		t.Fatalf("worker stats %+v: a run was delivered twice or failed", st)
	}

	// The observer sees each stored event (redeliveries aside, none here).
	waitFor(t, 30*time.Second, func() bool { return lat.distinct() == len(evs) }, "the observer to see all %d events (it saw %s)",
		len(evs), lazy(func() string { return fmt.Sprint(lat.distinct()) }))
	p50, p99, n := lat.percentiles()
	if st := obs.Stats(); st.Delivered != uint64(n) || n != len(evs) {
		t.Fatalf("observer stats %+v for %d events stored", st, len(evs))
	}
	s50, s99 := storeLatency(t, ctx, admin, len(evs))
	t.Logf("%d runs (%d events, %d remote interceptor calls) in %v: %.0f runs/s, %.0f events/s; event latency ce-time → durable observer p50 %v, p99 %v (ce-time → stored p50 %v, p99 %v); race detector %v",
		nRuns, len(evs), decided, elapsed.Round(time.Millisecond), float64(nRuns)/elapsed.Seconds(), float64(len(evs))/elapsed.Seconds(),
		p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), s50.Round(10*time.Microsecond), s99.Round(10*time.Microsecond), raceEnabled)
}

// storeLatency reads the n events of the stream with a raw ordered
// consumer and returns the p50 and p99 of (time stored − ce-time): how long an event
// took from its creation to the stream (interceptor calls included).
func storeLatency(t *testing.T, ctx context.Context, b *bus.Bus, n int) (p50, p99 time.Duration) {
	t.Helper()
	cons, err := b.JetStream().OrderedConsumer(ctx, b.Names().Events, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	l := &latencies{ids: map[string]int{}}
	for got := 0; got < n; {
		batch, err := cons.Fetch(min(500, n-got), jetstream.FetchContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			got++
			meta, err := m.Metadata()
			if err != nil {
				t.Fatal(err)
			}
			e, err := events.Decode(events.Header(m.Headers()), m.Data())
			if err != nil {
				t.Fatal(err)
			}
			l.add(e, meta.Timestamp.Sub(e.Time))
		}
		if err := batch.Error(); err != nil {
			t.Fatal(err)
		}
	}
	p50, p99, _ = l.percentiles()
	return p50, p99
}
