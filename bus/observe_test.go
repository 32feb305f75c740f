package bus_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
)

// collector records the events a handler saw.
type collector struct {
	mu   sync.Mutex
	seen []string
}

func (c *collector) add(e *events.Event) {
	c.mu.Lock()
	c.seen = append(c.seen, e.ID)
	c.mu.Unlock()
}

func (c *collector) ids() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.seen...)
}

func (c *collector) len() int { return len(c.ids()) }

func waitClosed(t *testing.T, o *bus.Observer) {
	t.Helper()
	select {
	case <-o.Closed():
	case <-time.After(10 * time.Second):
		t.Fatal("observer did not close")
	}
}

func TestObserverRestartLosesNothingAndRepeatsNothingAcked(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	var all []*events.Event
	for i := 0; i < 60; i++ {
		all = append(all, testEvent(t, "agent", "sess", "r1", events.StageToolBefore, uint64(i)))
	}
	publishAll(t, b, all[:40]...)

	cfg := bus.ObserveConfig{Durable: "billing", AckWait: time.Second}
	var first collector
	o1, err := b.Observe(ctx, cfg, func(_ context.Context, e *events.Event) error {
		first.add(e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return first.len() >= 15 }, "first observer handles 15 events")
	o1.Stop()
	waitClosed(t, o1)
	if st := o1.Stats(); int(st.Acked) != first.len() {
		t.Fatalf("first observer acked %d of the %d events it handled", st.Acked, first.len())
	}
	publishAll(t, b, all[40:]...) // stored while no observer runs

	var second collector
	o2, err := b.Observe(ctx, cfg, func(_ context.Context, e *events.Event) error {
		second.add(e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer o2.Stop()
	bustest.Eventuallyf(t, 15*time.Second, func() bool { return first.len()+second.len() >= len(all) },
		"both observers together see all %d events", len(all))

	seen := map[string]int{}
	for _, id := range append(first.ids(), second.ids()...) {
		seen[id]++
	}
	for _, e := range all {
		if seen[e.ID] != 1 {
			t.Errorf("event %d (%s) seen %d times, want exactly once", e.Seq, e.ID, seen[e.ID])
		}
	}
	// The first observer saw a prefix of the stream, in order. (The second
	// may see the first's unacknowledged prefetched events after AckWait,
	// out of order: that is JetStream's redelivery, not a loss.)
	for i, id := range first.ids() {
		if id != all[i].ID {
			t.Fatalf("first observer's event %d is %s, want %s", i, id, all[i].ID)
		}
	}
}

func TestObserverDeadLettersAfterMaxDeliver(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	poison := testEvent(t, "agent", "sess", "r1", events.StageToolBefore, 1)
	panics := testEvent(t, "agent", "sess", "r1", events.StageToolAfter, 2)
	fine := testEvent(t, "agent", "sess", "r1", events.StageStepCompleted, 3)
	publishAll(t, b, poison, panics, fine)

	var mu sync.Mutex
	attempts := map[string]int{}
	o, err := b.Observe(ctx, bus.ObserveConfig{
		Durable: "meter", MaxDeliver: 3, Backoff: []time.Duration{10 * time.Millisecond, 20 * time.Millisecond},
	}, func(_ context.Context, e *events.Event) error {
		mu.Lock()
		attempts[e.ID]++
		mu.Unlock()
		switch e.ID {
		case poison.ID:
			return errors.New("meter: upstream\nrefused")
		case panics.ID:
			panic("nil map")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Stop()
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return o.Stats().DeadLettered == 2 }, "2 dead letters")
	st := o.Stats()
	if st.Acked != 1 || st.Naked != 4 || st.Delivered != 7 || st.Malformed != 0 {
		t.Errorf("stats = %+v, want 1 acked, 4 naked, 7 delivered", st)
	}
	mu.Lock()
	if attempts[poison.ID] != 3 || attempts[panics.ID] != 3 || attempts[fine.ID] != 1 {
		t.Errorf("attempts = %v, want 3, 3 and 1", attempts)
	}
	mu.Unlock()

	dlq, err := b.JetStream().Stream(ctx, b.Names().DeadLetters)
	if err != nil {
		t.Fatal(err)
	}
	for seq, want := range map[uint64]struct{ id, err string }{
		1: {poison.ID, "meter: upstream refused"},
		2: {panics.ID, "handler panic: nil map"},
	} {
		m, err := dlq.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("dead letter %d: %v", seq, err)
		}
		if m.Subject != "hookbus.dlq.meter" || m.Header.Get("ce-id") != want.id ||
			m.Header.Get(bus.HeaderDLQError) != want.err || m.Header.Get(bus.HeaderDLQDeliveries) != "3" ||
			m.Header.Get(bus.HeaderDLQConsumer) != "meter" || !strings.HasPrefix(m.Header.Get(bus.HeaderDLQSubject), "hookbus.evt.agent.sess.") {
			t.Errorf("dead letter %d: subject %s headers %v", seq, m.Subject, m.Header)
		}
		// The original event survives intact in the dead letter.
		e, err := events.Decode(events.Header(m.Header), m.Data)
		if err != nil || e.ID != want.id {
			t.Errorf("dead letter %d does not decode to the event: %v", seq, err)
		}
	}
	// Nothing is delivered again: the consumer has no pending work.
	info, err := b.JetStream().Consumer(ctx, b.Names().Events, "meter")
	if err != nil {
		t.Fatal(err)
	}
	bustest.Eventuallyf(t, 5*time.Second, func() bool {
		ci, err := info.Info(ctx)
		return err == nil && ci.NumAckPending == 0 && ci.NumPending == 0
	}, "consumer has nothing pending")
}

func TestObserverSkipsMalformed(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	before := testEvent(t, "a", "s", "r1", events.StageToolBefore, 1)
	after := testEvent(t, "a", "s", "r1", events.StageToolBefore, 2)
	publishAll(t, b, before)
	publishMalformed(t, b.JetStream())
	publishAll(t, b, after)

	var got collector
	o, err := b.Observe(ctx, bus.ObserveConfig{Durable: "audit"}, func(_ context.Context, e *events.Event) error {
		got.add(e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Stop()
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return o.Stats().Acked == 2 && o.Stats().Malformed == 3 },
		"2 events handled and 3 malformed skipped")
	if ids := got.ids(); len(ids) != 2 || ids[0] != before.ID || ids[1] != after.ID {
		t.Fatalf("handled %v, want the two valid events", ids)
	}
	if st := o.Stats(); st.Naked != 0 || st.DeadLettered != 0 {
		t.Errorf("malformed messages must be terminated, not retried: %+v", st)
	}
}

func TestObserverFilters(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	want := []*events.Event{
		testEvent(t, "support", "s1", "r1", events.StageToolBefore, 1),
		testEvent(t, "support", "s2", "r2", events.StageToolAfter, 1),
	}
	publishAll(t, b,
		want[0],
		testEvent(t, "support", "s1", "r1", events.StageStepStarted, 2), // other stage
		testEvent(t, "sales", "s1", "r3", events.StageToolBefore, 1),    // other agent
		want[1],
	)
	var got collector
	o, err := b.Observe(ctx, bus.ObserveConfig{
		Durable: "tools", Agent: "support", Stages: []events.Stage{events.StageToolBefore, events.StageToolAfter},
	}, func(_ context.Context, e *events.Event) error { got.add(e); return nil })
	if err != nil {
		t.Fatal(err)
	}
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return o.Stats().Acked == 2 }, "2 matching events")
	o.Drain()
	waitClosed(t, o)
	if ids := got.ids(); strings.Join(ids, ",") != strings.Join([]string{want[0].ID, want[1].ID}, ",") {
		t.Fatalf("got %v, want %v", ids, []string{want[0].ID, want[1].ID})
	}
	if o.Stats().Delivered != 2 {
		t.Errorf("delivered %d, want only the 2 matching", o.Stats().Delivered)
	}
}

func TestObserveValidatesConfig(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	h := func(context.Context, *events.Event) error { return nil }
	for name, cfg := range map[string]bus.ObserveConfig{
		"no durable":     {},
		"dotted durable": {Durable: "a.b"},
		"slash durable":  {Durable: "a/b"},
		"bad deliver":    {Durable: "d", MaxDeliver: -2},
		"short ack wait": {Durable: "d", AckWait: time.Millisecond},
		"neg backoff":    {Durable: "d", Backoff: []time.Duration{-1}},
	} {
		if _, err := b.Observe(ctx, cfg, h); !errors.Is(err, bus.ErrInvalidOption) {
			t.Errorf("%s: %v, want ErrInvalidOption", name, err)
		}
	}
	if _, err := b.Observe(ctx, bus.ObserveConfig{Durable: "d", Agent: "a*"}, h); !errors.Is(err, events.ErrInvalidID) {
		t.Errorf("bad agent: %v", err)
	}
	if _, err := b.Observe(ctx, bus.ObserveConfig{Durable: "d", Stages: []events.Stage{"nope"}}, h); !errors.Is(err, events.ErrUnknownStage) {
		t.Errorf("bad stage: %v", err)
	}
	if _, err := b.Observe(ctx, bus.ObserveConfig{Durable: "d"}, nil); !errors.Is(err, bus.ErrInvalidOption) {
		t.Errorf("nil handler: %v", err)
	}
}

func TestObserverStopsWithContext(t *testing.T) {
	b := bustest.StartBus(t)
	ctx, cancel := context.WithCancel(testCtx(t))
	o, err := b.Observe(ctx, bus.ObserveConfig{Durable: "d"}, func(context.Context, *events.Event) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	waitClosed(t, o)
}

func TestObserverSlowHandlerKeepsItsEvent(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	publishAll(t, b, testEvent(t, "a", "s", "r1", events.StageToolBefore, 1))
	release := make(chan struct{})
	var calls collector
	o, err := b.Observe(ctx, bus.ObserveConfig{Durable: "slow", AckWait: 500 * time.Millisecond},
		func(_ context.Context, e *events.Event) error {
			calls.add(e)
			<-release
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Stop()
	bustest.Eventually(t, 5*time.Second, func() bool { return calls.len() == 1 })
	// Hold the handler for four AckWaits: without progress reports the
	// server would deliver the event again.
	hold := time.NewTimer(2 * time.Second)
	<-hold.C
	close(release)
	bustest.Eventually(t, 5*time.Second, func() bool { return o.Stats().Acked == 1 })
	c, err := b.JetStream().Consumer(ctx, b.Names().Events, "slow")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ci.Delivered.Consumer != 1 || calls.len() != 1 {
		t.Fatalf("event delivered %d times (handler called %d), want once", ci.Delivered.Consumer, calls.len())
	}
}

// A stopped observer hands back the events it received and did not handle
// (the one its handler was working on included) and the one it failed and
// that waits out its back-off: the durable's next observer gets them at
// once, in stream order, not after AckWait or the back-off.
func TestStoppedObserverHandsBackWhatItDidNotHandle(t *testing.T) {
	srv, nc := bustest.Start(t)
	b := bustest.Provision(t, nc)
	ctx := testCtx(t)
	const n = 20
	var all []*events.Event
	for i := range n {
		all = append(all, testEvent(t, "a", "s", "r1", events.StageToolBefore, uint64(i+1)))
	}
	publishAll(t, b, all...)
	// AckWait and back-off far longer than the test: only a hand-back lets
	// the second observer see the events in time.
	cfg := bus.ObserveConfig{Durable: "handback", AckWait: 10 * time.Minute, Backoff: []time.Duration{10 * time.Minute}}
	started := make(chan struct{})
	var once sync.Once
	// The first observer has a connection of its own, whose incoming
	// messages are its events only.
	oc := bustest.Conn(t, srv)
	ob, err := bus.New(oc)
	if err != nil {
		t.Fatal(err)
	}
	received := oc.Stats().InMsgs
	o1, err := ob.Observe(ctx, cfg, func(ctx context.Context, e *events.Event) error {
		if e.ID == all[0].ID {
			return errors.New("not now") // waits out its back-off on the server
		}
		once.Do(func() { close(started) })
		<-ctx.Done() // at work on the second until stopped
		return ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	c, err := b.JetStream().Consumer(ctx, b.Names().Events, "handback")
	if err != nil {
		t.Fatal(err)
	}
	// Every event is delivered to the first observer (one failed, one
	// handled, the others waiting in its buffer) before it stops.
	bustest.Eventuallyf(t, 10*time.Second, func() bool {
		ci, err := c.Info(ctx)
		return err == nil && ci.NumAckPending == n && o1.Stats().Naked == 1
	}, "the first observer holds all %d events and failed one", n)
	// The server counts an event delivered when it sends it; the hand-back
	// covers the events the observer has received (one still on the wire
	// when the subscription ends waits for AckWait), so the observer stops
	// once its own connection has read them all.
	// (Its other incoming message is the reply creating the consumer.)
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return oc.Stats().InMsgs-received >= n+1 },
		"the first observer's connection read %d of %d events", oc.Stats().InMsgs-received-1, n)
	o1.Stop()
	waitClosed(t, o1)
	if st := o1.Stats(); st.Acked != 0 || st.Returned != n {
		t.Fatalf("first observer: %+v, want nothing acked and %d events handed back", st, n)
	}

	var second collector
	o2, err := b.Observe(ctx, cfg, func(_ context.Context, e *events.Event) error {
		second.add(e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer o2.Stop()
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return second.len() == n },
		"the second observer got %d of %d events (AckWait and back-off are 10m)", second.len(), n)
	// Every event once; those the first observer never failed in stream
	// order (the one it failed may come back after them: JetStream does
	// not promise the order of redeliveries).
	got := second.ids()
	if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(ids(all)))) {
		t.Fatalf("the second observer got\n%s\nwant each of\n%s", strings.Join(got, " "), strings.Join(ids(all), " "))
	}
	unfailed := slices.DeleteFunc(slices.Clone(got), func(id string) bool { return id == all[0].ID })
	if g, w := strings.Join(unfailed, " "), strings.Join(ids(all[1:]), " "); g != w {
		t.Fatalf("the second observer got the events in another order than the stream's:\n got %s\nwant %s", g, w)
	}
}
