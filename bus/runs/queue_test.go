package runs_test

import (
	"context"
	"encoding/json"
	"errors"
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
)

func runReq(agent, run string) *events.RunRequest {
	return &events.RunRequest{RunID: run, AgentID: agent, SessionID: "s-" + run, Prompt: "hello"}
}

func queued(t *testing.T, b *bus.Bus) uint64 {
	t.Helper()
	s, err := b.JetStream().Stream(testCtx(t), b.Names().Runs)
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().State.Msgs
}

func waitRunsClosed(t *testing.T, rc *runs.Consumer) {
	t.Helper()
	select {
	case <-rc.Closed():
	case <-time.After(10 * time.Second):
		t.Fatal("run consumer did not close")
	}
}

func fastRuns(cfg runs.ConsumerConfig) runs.ConsumerConfig {
	cfg.PollWait = 200 * time.Millisecond
	return cfg
}

func TestRunsConcurrencyAndDedup(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	const n = 6
	for i := 0; i < n; i++ {
		req := runReq("support", events.NewID())
		if err := runs.New(b).Submit(ctx, req); err != nil {
			t.Fatal(err)
		}
		if i == 0 { // a retried submission is queued once
			if err := runs.New(b).Submit(ctx, req); err != nil {
				t.Fatal(err)
			}
		}
	}
	if q := queued(t, b); q != n {
		t.Fatalf("queue holds %d requests, want %d", q, n)
	}

	var inflight, peak, started atomic.Int32
	var mu sync.Mutex
	handled := map[string]int{}
	rc, err := runs.New(b).Consume(ctx, fastRuns(runs.ConsumerConfig{Agents: runs.Agents("support"), Concurrency: 2}), func(ctx context.Context, req *events.RunRequest) (runs.Outcome, error) {
		started.Add(1)
		cur := inflight.Add(1)
		defer inflight.Add(-1)
		for p := peak.Load(); cur > p && !peak.CompareAndSwap(p, cur); p = peak.Load() {
		}
		// Hold the slot until the other one is busy too (unless no run is
		// left to start): proves two run at once; the peak proves never three.
		bustest.Poll(ctx, 5*time.Second, time.Millisecond, func() bool { return inflight.Load() >= 2 || started.Load() >= n })
		mu.Lock()
		handled[req.RunID]++
		mu.Unlock()
		if req.SubmittedAt.IsZero() || req.Prompt != "hello" {
			t.Errorf("request decoded wrong: %+v", req)
		}
		return runs.Outcome{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	bustest.Eventuallyf(t, 15*time.Second, func() bool { return rc.Stats().Completed == n }, "%d runs completed", n)
	rc.Drain()
	waitRunsClosed(t, rc)
	if p := peak.Load(); p != 2 {
		t.Errorf("peak concurrency %d, want 2", p)
	}
	for id, c := range handled {
		if c != 1 {
			t.Errorf("run %s handled %d times", id, c)
		}
	}
	if len(handled) != n || queued(t, b) != 0 {
		t.Errorf("handled %d runs, %d still queued", len(handled), queued(t, b))
	}
}

func TestRunFailureIsRetriedAndMalformedDropped(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	if _, err := b.JetStream().PublishMsg(ctx, &nats.Msg{Subject: "hookbus.run.support", Data: []byte(`{"run_id":`)}); err != nil {
		t.Fatal(err)
	}
	req := runReq("support", "r1")
	if err := runs.New(b).Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int32
	rc, err := runs.New(b).Consume(ctx, fastRuns(runs.ConsumerConfig{Agents: runs.Agents("support")}), func(_ context.Context, r *events.RunRequest) (runs.Outcome, error) {
		if attempts.Add(1) == 1 {
			return runs.Outcome{}, errors.New("model provider down")
		}
		return runs.Outcome{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Stop()
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return rc.Stats().Completed == 1 }, "run completes on its 2nd attempt")
	if st := rc.Stats(); st.Failed != 1 || st.Malformed != 1 || attempts.Load() != 2 {
		t.Errorf("stats %+v, attempts %d; want 1 failure, 1 malformed, 2 attempts", st, attempts.Load())
	}
	bustest.Eventuallyf(t, 5*time.Second, func() bool { return queued(t, b) == 0 }, "queue empty")
}

func TestLongRunKeepsItsLease(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	if err := runs.New(b).Submit(ctx, runReq("support", "long")); err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int32
	release := make(chan struct{})
	handler := func(ctx context.Context, _ *events.RunRequest) (runs.Outcome, error) {
		attempts.Add(1)
		select {
		case <-release:
			return runs.Outcome{}, nil
		case <-ctx.Done():
			return runs.Outcome{}, ctx.Err()
		}
	}
	cfg := fastRuns(runs.ConsumerConfig{Agents: runs.Agents("support"), AckWait: time.Second})
	w1, err := runs.New(b).Consume(ctx, cfg, handler)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := runs.New(b).Consume(ctx, cfg, handler) // would take the run if its lease lapsed
	if err != nil {
		t.Fatal(err)
	}
	bustest.Eventuallyf(t, 5*time.Second, func() bool { return attempts.Load() == 1 }, "run started")
	// Three AckWaits: without InProgress the run would go to the other worker.
	deadline := time.After(3 * time.Second)
	for waiting := true; waiting; {
		select {
		case <-deadline:
			waiting = false
		case <-time.After(50 * time.Millisecond):
			if attempts.Load() != 1 {
				t.Fatalf("run redelivered while running (%d attempts)", attempts.Load())
			}
		}
	}
	close(release)
	bustest.Eventuallyf(t, 5*time.Second, func() bool { return w1.Stats().Completed+w2.Stats().Completed == 1 }, "run completed once")
	w1.Stop()
	w2.Stop()
	waitRunsClosed(t, w1)
	waitRunsClosed(t, w2)
}

func TestStoppedWorkerHandsRunBack(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	if err := runs.New(b).Submit(ctx, runReq("support", "r1")); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	w1, err := runs.New(b).Consume(ctx, fastRuns(runs.ConsumerConfig{Agents: runs.Agents("support")}), func(ctx context.Context, _ *events.RunRequest) (runs.Outcome, error) {
		close(started)
		<-ctx.Done() // a worker shutting down mid-run
		return runs.Outcome{}, ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	w1.Stop()
	waitRunsClosed(t, w1)
	done := make(chan string, 1)
	w2, err := runs.New(b).Consume(ctx, fastRuns(runs.ConsumerConfig{Agents: runs.Agents("support")}), func(_ context.Context, r *events.RunRequest) (runs.Outcome, error) {
		done <- r.RunID
		return runs.Outcome{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	select {
	case id := <-done:
		if id != "r1" {
			t.Fatalf("got run %s", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run not handed to the next worker")
	}
}

// A worker handing its runs back (a stopping worker whose drain timed
// out) cancels its handlers with ErrHandedBack as the cause and queues the
// request again, using up none of its attempts: with one attempt allowed,
// the next worker still gets it.
func TestHandBackGivesRunToAnotherWorker(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	if err := runs.New(b).Submit(ctx, runReq("support", "r1")); err != nil {
		t.Fatal(err)
	}
	started, cause := make(chan struct{}), make(chan error, 1)
	cfg := fastRuns(runs.ConsumerConfig{Agents: runs.Agents("support"), MaxDeliver: 1})
	w1, err := runs.New(b).Consume(ctx, cfg, func(ctx context.Context, _ *events.RunRequest) (runs.Outcome, error) {
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return runs.Outcome{}, ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	w1.HandBack()
	waitRunsClosed(t, w1)
	if c := <-cause; !errors.Is(c, runs.ErrHandedBack) {
		t.Fatalf("the handler's cause %v, want ErrHandedBack", c)
	}
	if s := w1.Stats(); s.HandedBack != 1 || s.Dropped != 0 {
		t.Fatalf("stats %+v, want one run handed back, none dropped", s)
	}
	done := make(chan string, 1)
	w2, err := runs.New(b).Consume(ctx, cfg, func(_ context.Context, r *events.RunRequest) (runs.Outcome, error) {
		done <- r.RunID
		return runs.Outcome{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	select {
	case id := <-done:
		if id != "r1" {
			t.Fatalf("got run %s", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run not handed to the next worker")
	}
}

func TestRunsAgentsFilterAndValidation(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	for _, r := range []*events.RunRequest{runReq("support", "r1"), runReq("sales", "r2")} {
		if err := runs.New(b).Submit(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan string, 4)
	rc, err := runs.New(b).Consume(ctx, fastRuns(runs.ConsumerConfig{Durable: "sales-pool", Agents: runs.Agents("sales")}),
		func(_ context.Context, r *events.RunRequest) (runs.Outcome, error) {
			got <- r.AgentID
			return runs.Outcome{}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return rc.Stats().Completed == 1 }, "sales run done")
	rc.Stop()
	waitRunsClosed(t, rc)
	if a := <-got; a != "sales" || len(got) != 0 {
		t.Fatalf("pool handled %s and %d more", a, len(got))
	}
	if queued(t, b) != 1 {
		t.Fatalf("the support run must still be queued")
	}

	if err := runs.New(b).Submit(ctx, &events.RunRequest{RunID: "r.x", AgentID: "a", SessionID: "s", Prompt: "p"}); !errors.Is(err, events.ErrInvalidID) {
		t.Errorf("bad run id: %v", err)
	}
	if err := runs.New(b).Submit(ctx, &events.RunRequest{RunID: "r", AgentID: "a", SessionID: "s"}); !errors.Is(err, events.ErrPayload) {
		t.Errorf("empty prompt: %v", err)
	}
	h := func(context.Context, *events.RunRequest) (runs.Outcome, error) { return runs.Outcome{}, nil }
	for name, cfg := range map[string]runs.ConsumerConfig{
		"bad durable":                {Durable: "a b"},
		"neg conc":                   {Concurrency: -1},
		"short ackwait":              {AckWait: time.Millisecond},
		"no agents":                  {},
		"agent twice":                {Agents: runs.Agents("a", "a")},
		"adopt without a definition": {Agents: []runs.ServedAgent{{ID: "a", Adopt: true}}},
	} {
		if _, err := runs.New(b).Consume(ctx, cfg, h); !errors.Is(err, bus.ErrInvalidOption) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := runs.New(b).Consume(ctx, runs.ConsumerConfig{Agents: runs.Agents("a*")}, h); !errors.Is(err, events.ErrInvalidID) {
		t.Errorf("bad agent: %v", err)
	}
	// A second pool serving sales overlaps the sales pool's subjects.
	if _, err := runs.New(b).Consume(ctx, runs.ConsumerConfig{Durable: "other", Agents: runs.Agents("sales")}, h); !errors.Is(err, bus.ErrConsumer) {
		t.Errorf("overlapping pool: %v, want ErrConsumer", err)
	}
}

// A run request whose body names another agent than the subject it was
// published on is refused: never run, dead-lettered with the reason, and
// gone from the queue (permissions on <prefix>.run.<agent> mean something).
func TestRunRequestNamingAnotherAgentIsRefused(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	forged := runReq("victim", events.NewID())
	body, err := json.Marshal(forged)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.JetStream().Publish(ctx, "hookbus.run.demo", body); err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	rc, err := runs.New(b).Consume(ctx, fastRuns(runs.ConsumerConfig{Agents: runs.Agents("demo")}), func(context.Context, *events.RunRequest) (runs.Outcome, error) {
		ran.Add(1)
		return runs.Outcome{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return rc.Stats().Refused == 1 }, "the request refused")
	rc.Stop()
	waitRunsClosed(t, rc)
	if ran.Load() != 0 {
		t.Fatal("a request naming another agent was run")
	}
	dlq, err := b.JetStream().Stream(ctx, b.Names().DeadLetters)
	if err != nil {
		t.Fatal(err)
	}
	m, err := dlq.GetLastMsgForSubject(ctx, "hookbus.dlq."+runs.DefaultDurable)
	if err != nil {
		t.Fatalf("no dead letter: %v", err)
	}
	if why := m.Header.Get(bus.HeaderDLQError); !strings.Contains(why, `names agent "victim"`) || !strings.Contains(why, "hookbus.run.demo") {
		t.Fatalf("dead letter says %q", why)
	}
	bustest.Eventuallyf(t, 5*time.Second, func() bool { return queued(t, b) == 0 }, "the refused request gone from the queue")
}

// A handler that refuses its request has it dead-lettered with its error
// and terminated: run once, never handed back.
func TestRefusedRunRequestIsDeadLettered(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	if err := runs.New(b).Submit(ctx, runReq("demo", events.NewID())); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	rc, err := runs.New(b).Consume(ctx, fastRuns(runs.ConsumerConfig{Agents: runs.Agents("demo")}), func(context.Context, *events.RunRequest) (runs.Outcome, error) {
		calls.Add(1)
		return runs.Outcome{Then: runs.Refuse}, errors.New("the agent has no such tool")
	})
	if err != nil {
		t.Fatal(err)
	}
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return rc.Stats().Refused == 1 }, "the request refused")
	bustest.Eventuallyf(t, 5*time.Second, func() bool { return queued(t, b) == 0 }, "the refused request gone from the queue")
	rc.Stop()
	waitRunsClosed(t, rc)
	if st := rc.Stats(); calls.Load() != 1 || st.Failed != 0 || st.Completed != 0 {
		t.Fatalf("stats %+v after %d calls; want one refusal and nothing else", st, calls.Load())
	}
	dlq, err := b.JetStream().Stream(ctx, b.Names().DeadLetters)
	if err != nil {
		t.Fatal(err)
	}
	m, err := dlq.GetLastMsgForSubject(ctx, "hookbus.dlq."+runs.DefaultDurable)
	if err != nil {
		t.Fatalf("no dead letter: %v", err)
	}
	if why := m.Header.Get(bus.HeaderDLQError); !strings.Contains(why, "no such tool") {
		t.Fatalf("dead letter says %q", why)
	}
}

// A handler whose outcome is Leave leaves the request alone: it is not
// acknowledged (that would end the delivery another worker holds) nor
// handed back; it comes back only when its lease lapses.
func TestAbandonedRunRequestIsLeftAlone(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	req := runReq("demo", events.NewID())
	if err := runs.New(b).Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	var first, second time.Time
	rc, err := runs.New(b).Consume(ctx, fastRuns(runs.ConsumerConfig{Agents: runs.Agents("demo"), AckWait: 3 * time.Second}), func(context.Context, *events.RunRequest) (runs.Outcome, error) {
		if calls.Add(1) == 1 {
			first = time.Now()
			return runs.Outcome{Then: runs.Leave}, errors.New("another worker holds the run")
		}
		second = time.Now()
		return runs.Outcome{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	bustest.Eventuallyf(t, 15*time.Second, func() bool { return rc.Stats().Completed == 1 }, "the request run again after its lease")
	rc.Stop()
	waitRunsClosed(t, rc)
	st := rc.Stats()
	if st.Abandoned != 1 || st.Failed != 0 || calls.Load() != 2 {
		t.Fatalf("stats %+v after %d calls; want one abandoned, then one completed", st, calls.Load())
	}
	// Handed back, it would come again after the 1s nak delay; left
	// alone, only once its 3s lease lapsed (counted from its delivery,
	// a moment before the handler started).
	if gap := second.Sub(first); gap < 2500*time.Millisecond {
		t.Fatalf("delivered again after %v, before its 3s lease lapsed: the abandoned delivery was handed back", gap)
	}
}
