package bus_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/embedded"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// storedEvents reads the events stream by sequence and decodes every message.
func storedEvents(t *testing.T, b *bus.Bus) []*events.Event {
	t.Helper()
	ctx := testCtx(t)
	s, err := b.JetStream().Stream(ctx, b.Names().Events)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []*events.Event
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("get seq %d: %v", seq, err)
		}
		e, err := events.Decode(events.Header(m.Header), m.Data)
		if err != nil {
			t.Fatalf("seq %d: %v", seq, err)
		}
		out = append(out, e)
	}
	return out
}

func TestProvisionIsIdempotent(t *testing.T) {
	_, nc := bustest.Start(t)
	ctx := testCtx(t)
	b, err := bus.New(nc, bus.WithDuplicateWindow(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := b.Provision(ctx); err != nil {
			t.Fatalf("provision #%d: %v", i+1, err)
		}
	}
	// A second bus (another worker starting) provisions the same server.
	if err := bustest.Provision(t, nc).Provision(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := b.JetStream().Stream(ctx, "HOOKBUS_EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	if cfg.Subjects[0] != "hookbus.evt.>" || cfg.Retention != jetstream.LimitsPolicy || cfg.Storage != jetstream.FileStorage {
		t.Errorf("events stream config = %+v", cfg)
	}
	if cfg.Duplicates != bus.DefaultDuplicateWindow {
		t.Errorf("duplicate window = %v, want the last provisioning's %v", cfg.Duplicates, bus.DefaultDuplicateWindow)
	}
	runs, err := b.JetStream().Stream(ctx, "HOOKBUS_RUNS")
	if err != nil {
		t.Fatal(err)
	}
	if runs.CachedInfo().Config.Retention != jetstream.WorkQueuePolicy {
		t.Errorf("runs retention = %v, want work queue", runs.CachedInfo().Config.Retention)
	}
	cps, err := b.JetStream().Stream(ctx, "HOOKBUS_CHECKPOINTS")
	if err != nil {
		t.Fatal(err)
	}
	if c := cps.CachedInfo().Config; c.Subjects[0] != "hookbus.checkpoint" || !c.DenyDelete || !c.DenyPurge || c.MaxAge != 0 {
		t.Errorf("checkpoints stream config = %+v, want no limits, no delete, no purge", c)
	}
	for _, kv := range []string{"hookbus_hooks", "hookbus_trust", "hookbus_decisions", "hookbus_budgets", "hookbus_agents", "hookbus_workers", "hookbus_leases"} {
		if _, err := b.JetStream().KeyValue(ctx, kv); err != nil {
			t.Errorf("kv %s: %v", kv, err)
		}
	}
	if _, err := b.JetStream().ObjectStore(ctx, "hookbus_payloads"); err != nil {
		t.Errorf("object store: %v", err)
	}
}

func TestPrefixDerivesNames(t *testing.T) {
	b := bustest.StartBus(t, bus.WithPrefix("acme.hook-bus"))
	want := bus.Names{Events: "ACME_HOOK-BUS_EVENTS", Runs: "ACME_HOOK-BUS_RUNS", Wakes: "ACME_HOOK-BUS_WAKES", DeadLetters: "ACME_HOOK-BUS_DLQ",
		Checkpoints: "ACME_HOOK-BUS_CHECKPOINTS", Usage: "ACME_HOOK-BUS_USAGE", Counters: "ACME_HOOK-BUS_COUNTERS",
		Hooks: "acme_hook-bus_hooks", Trust: "acme_hook-bus_trust", Decisions: "acme_hook-bus_decisions", Budgets: "acme_hook-bus_budgets",
		Agents: "acme_hook-bus_agents", Workers: "acme_hook-bus_workers", Leases: "acme_hook-bus_leases", Payloads: "acme_hook-bus_payloads"}
	if b.Names() != want {
		t.Fatalf("names = %+v, want %+v", b.Names(), want)
	}
	ctx := testCtx(t)
	e := testEvent(t, "a", "s", "r", events.StageStepStarted, 1)
	if err := b.PublishSync(ctx, e); err != nil {
		t.Fatal(err)
	}
	s, err := b.JetStream().Stream(ctx, want.Events)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetLastMsgForSubject(ctx, "acme.hook-bus.evt.a.s.step.started")
	if err != nil || m.Header.Get("ce-id") != e.ID {
		t.Fatalf("event not under the prefix: %v", err)
	}
}

func TestOptionsAreValidated(t *testing.T) {
	_, nc := bustest.Start(t)
	for name, opt := range map[string]bus.Option{
		"wildcard prefix": bus.WithPrefix("a.*"),
		"slash prefix":    bus.WithPrefix("a/b"),
		"empty prefix":    bus.WithPrefix(""),
		"nil logger":      bus.WithLogger(nil),
		"replicas 0":      bus.WithReplicas(0),
		"negative age":    bus.WithEventsMaxAge(-time.Second),
		"tiny window":     bus.WithDuplicateWindow(time.Millisecond),
		"negative max":    bus.WithMaxPayload(-1),
		"zero timeout":    bus.WithDefaultTimeout(0),
		"zero ack":        bus.WithPublishRetry(0, time.Second),
		"pending 0":       bus.WithMaxPending(0),
	} {
		if _, err := bus.New(nc, opt); !errors.Is(err, bus.ErrInvalidOption) {
			t.Errorf("%s: err = %v, want ErrInvalidOption", name, err)
		}
	}
	if _, err := bus.New(nil); !errors.Is(err, bus.ErrInvalidOption) {
		t.Errorf("nil conn: err = %v", err)
	}
}

func TestPublishFlushStoresInOrder(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	var want []string
	for i := 0; i < 200; i++ {
		run := []string{"r1", "r2"}[i%2]
		e := testEvent(t, "agent", "sess", run, events.StageToolBefore, uint64(i))
		want = append(want, e.ID)
		if err := b.Publish(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	for _, run := range []string{"r1", "r2", "never-published"} {
		if err := b.Flush(ctx, run); err != nil {
			t.Fatalf("flush %s: %v", run, err)
		}
	}
	got := storedEvents(t, b)
	if len(got) != len(want) {
		t.Fatalf("stream holds %d events, want %d", len(got), len(want))
	}
	for i, e := range got {
		if e.ID != want[i] || e.Seq != uint64(i) {
			t.Fatalf("event %d: id %s seq %d, want %s seq %d", i, e.ID, e.Seq, want[i], i)
		}
	}
}

// The same event id published again is stored once, and the publisher is
// told: a duplicate reported on the first send of a publish means the
// stream already held another message under this id, so this publish was
// not stored (hookbus' own retries, sent after a lost ack, are not
// reported).
func TestPublishSameIDIsStoredOnce(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	e := testEvent(t, "agent", "sess", "r1", events.StageToolBefore, 1)
	if err := b.PublishSync(ctx, e); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := b.Publish(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Flush(ctx, "r1"); !errors.Is(err, bus.ErrDuplicate) {
		t.Fatalf("Flush after publishing a stored id again = %v, want ErrDuplicate", err)
	}
	if err := b.PublishSync(ctx, e); !errors.Is(err, bus.ErrDuplicate) {
		t.Fatalf("PublishSync of a stored id = %v, want ErrDuplicate", err)
	}
	if got := storedEvents(t, b); len(got) != 1 || got[0].ID != e.ID {
		t.Fatalf("stream holds %d events, want exactly 1", len(got))
	}
}

func TestPublishSyncIsStoredOnReturn(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	s, err := b.JetStream().Stream(ctx, b.Names().Events)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		e := testEvent(t, "agent", "sess", "r1", events.StageToolBefore, uint64(i))
		if err := b.PublishSync(ctx, e); err != nil {
			t.Fatal(err)
		}
		// No Flush, no polling: the ack came back, so the stream has it.
		m, err := s.GetLastMsgForSubject(ctx, "hookbus.evt.agent.sess.tool.before")
		if err != nil {
			t.Fatal(err)
		}
		if m.Header.Get("ce-id") != e.ID {
			t.Fatalf("last stored %s, want %s", m.Header.Get("ce-id"), e.ID)
		}
	}
}

func TestPublishRejectsInvalidEvents(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	bad := testEvent(t, "agent", "sess", "r1", events.StageToolBefore, 1)
	bad.AgentID = "a.b"
	if err := b.Publish(ctx, bad); !errors.Is(err, events.ErrInvalidID) {
		t.Errorf("Publish bad agent: %v, want ErrInvalidID", err)
	}
	bad = testEvent(t, "agent", "sess", "r1", events.StageToolBefore, 1)
	bad.Data = []byte(`{"oops"`)
	if err := b.PublishSync(ctx, bad); !errors.Is(err, events.ErrMalformedEvent) {
		t.Errorf("PublishSync bad data: %v, want ErrMalformedEvent", err)
	}
	if err := b.Publish(ctx, nil); !errors.Is(err, events.ErrMalformedEvent) {
		t.Errorf("Publish nil: %v", err)
	}
	if err := b.Flush(ctx, "r1"); err != nil {
		t.Errorf("rejected events must not count as pending: %v", err)
	}
}

func TestFlushReportsFailedPublish(t *testing.T) {
	_, nc := bustest.Start(t)
	// No Provision: no stream listens, so every publish finds no stream.
	b, err := bus.New(nc, bus.WithPublishRetry(200*time.Millisecond, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	for i := 0; i < 3; i++ {
		if err := b.Publish(ctx, testEvent(t, "a", "s", "r1", events.StageToolBefore, uint64(i))); err != nil {
			t.Fatal(err)
		}
	}
	err = b.Flush(ctx, "r1")
	if !errors.Is(err, bus.ErrPublish) || !errors.Is(err, jetstream.ErrNoStreamResponse) {
		t.Fatalf("Flush = %v, want ErrPublish wrapping ErrNoStreamResponse", err)
	}
	if err := b.Flush(ctx, "r1"); err != nil {
		t.Fatalf("second Flush = %v, want the failure reported once", err)
	}
	ctx2, cancel := context.WithCancel(ctx)
	cancel()
	if err := b.Publish(ctx2, testEvent(t, "a", "s", "r2", events.StageToolBefore, 1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Publish with a done ctx = %v", err)
	}
	if err := b.Flush(ctx, "r2"); err != nil {
		t.Fatalf("Flush after a refused publish = %v", err)
	}
}

func TestPublishSurvivesServerRestart(t *testing.T) {
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx := testCtx(t)
	srv, err := embedded.Start(ctx, embedded.Config{StoreDir: dir, Listen: addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown() })
	nc, err := bus.Connect(srv.ClientURL(), nats.ReconnectWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var logs strings.Builder
	var logMu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b := bustest.Provision(t, nc, bus.WithPublishRetry(time.Second, time.Minute), bus.WithLogger(log))

	var want []string
	publish := func(n int) {
		for i := 0; i < n; i++ {
			e := testEvent(t, "a", "s", "r1", events.StageToolBefore, uint64(len(want)))
			want = append(want, e.ID)
			if err := b.Publish(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
	}
	publish(50)
	if err := b.Flush(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	publish(50) // acks in flight when the server goes away
	srv.Shutdown()
	publish(50) // published while it is down: buffered by the client
	srv, err = embedded.Start(ctx, embedded.Config{StoreDir: dir, Listen: addr})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(ctx, "r1"); err != nil {
		t.Fatalf("flush after the restart: %v", err)
	}
	got := ids(storedEvents(t, b))
	seen := map[string]int{}
	for _, id := range got {
		seen[id]++
	}
	for _, id := range want {
		if seen[id] != 1 {
			t.Errorf("event %s stored %d times, want once", id, seen[id])
		}
	}
	if len(got) != len(want) {
		t.Errorf("stream holds %d events, want %d", len(got), len(want))
	}
	logMu.Lock()
	t.Logf("publishes retried: %d", strings.Count(logs.String(), "publish retried"))
	logMu.Unlock()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
