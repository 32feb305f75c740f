package bus_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The claim check: events larger than the server's max_payload (1 MiB by
// default) travel as a small message with a dataref; their data is an
// object of the payloads store, and every reader gets it back.

const bigSize = 5 << 20 // a 5 MiB tool result

// rawMsg is the stored message of event id (read by stream sequence).
func rawMsg(t *testing.T, b *bus.Bus, id string) *jetstream.RawStreamMsg {
	t.Helper()
	ctx := bigCtx(t)
	s, err := b.JetStream().Stream(ctx, b.Names().Events)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("get seq %d: %v", seq, err)
		}
		if m.Header.Get("ce-id") == id {
			return m
		}
	}
	t.Fatalf("event %s is not in the stream", id)
	return nil
}

// streamMsgs is how many messages the events stream holds.
func streamMsgs(t *testing.T, b *bus.Bus) uint64 {
	t.Helper()
	ctx := bigCtx(t)
	s, err := b.JetStream().Stream(ctx, b.Names().Events)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

func payloadStore(t *testing.T, b *bus.Bus) jetstream.ObjectStore {
	t.Helper()
	obs, err := b.JetStream().ObjectStore(bigCtx(t), b.Names().Payloads)
	if err != nil {
		t.Fatal(err)
	}
	return obs
}

// erasablePayloads replaces b's payloads bucket by a plain object store,
// whose objects can be deleted (bus.Provision's refuses purges and
// roll-ups): how a test loses an object, as expiry or a damaged store
// would.
func erasablePayloads(t *testing.T, b *bus.Bus) {
	t.Helper()
	ctx := bigCtx(t)
	if err := b.JetStream().DeleteObjectStore(ctx, b.Names().Payloads); err != nil {
		t.Fatal(err)
	}
	if _, err := b.JetStream().CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: b.Names().Payloads}); err != nil {
		t.Fatal(err)
	}
}

// objects lists the payload objects' names.
func objects(t *testing.T, b *bus.Bus) []string {
	t.Helper()
	list, err := payloadStore(t, b).List(bigCtx(t))
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range list {
		names = append(names, o.Name)
	}
	return names
}

// ref is the dataref hookbus gives e's data.
func ref(b *bus.Bus, e *events.Event) string {
	return b.Names().Payloads + "/" + bus.ObjectName(e.ID, e.Data)
}

// checkStub checks that e is stored as a small message with a dataref and no
// body.
func checkStub(t *testing.T, b *bus.Bus, e *events.Event) {
	t.Helper()
	m := rawMsg(t, b, e.ID)
	if len(m.Data) != 0 {
		t.Errorf("event %s stored with a %d-byte body, want none", e.ID, len(m.Data))
	}
	if got := m.Header.Get("ce-dataref"); got != ref(b, e) {
		t.Errorf("event %s ce-dataref = %q, want %q", e.ID, got, ref(b, e))
	}
	size := 0
	for k, vs := range m.Header {
		for _, v := range vs {
			size += len(k) + len(v) + 4
		}
	}
	if size > 1024 {
		t.Errorf("stored stub of %s is %d bytes: %v", e.ID, size, m.Header)
	}
}

// checkFetched checks that got is want with its data fetched back and the
// dataref kept.
func checkFetched(t *testing.T, b *bus.Bus, how string, got, want *events.Event) {
	t.Helper()
	if got.ID != want.ID {
		t.Fatalf("%s: event %s, want %s", how, got.ID, want.ID)
	}
	if !bytes.Equal(got.Data, want.Data) {
		t.Errorf("%s: event %s data is %d bytes, want the %d published", how, got.ID, len(got.Data), len(want.Data))
	}
	if got.DataRef != ref(b, want) {
		t.Errorf("%s: event %s DataRef = %q, want %q", how, got.ID, got.DataRef, ref(b, want))
	}
	var p events.ToolAfter
	if err := got.DecodeData(&p); err != nil || len(p.Result.Content) != bigSize {
		t.Errorf("%s: event %s decodes to %d bytes of content, err %v", how, got.ID, len(p.Result.Content), err)
	}
}

// A 5 MiB tool.after published asynchronously and one published
// synchronously are stored as small messages with a dataref, and Replay,
// SessionEvents, Tail, WaitRun and a durable observer all get their data
// back.
func TestClaimCheckRoundTrip(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := bigCtx(t)
	const agent, session, run = "agent-1", "big", "run-1"

	since := time.Now()
	tailCtx, stopTail := context.WithCancel(ctx)
	var (
		tailMu  sync.Mutex
		tailed  []*events.Event
		tailErr = make(chan error, 1)
	)
	go func() {
		tailErr <- b.Tail(tailCtx, bus.Filter{Agent: agent, Session: session, Since: since}, func(e *events.Event) error {
			tailMu.Lock()
			tailed = append(tailed, e)
			tailMu.Unlock()
			return nil
		})
	}()

	async := sizedEvent(t, agent, session, run, 1, bigSize)
	syncEv := sizedEvent(t, agent, session, run, 2, bigSize)
	small := testEvent(t, agent, session, run, events.StageStepCompleted, 3)
	asyncData := append([]byte(nil), async.Data...)
	start := time.Now()
	if err := b.Publish(ctx, async); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(ctx, run); err != nil {
		t.Fatal(err)
	}
	t.Logf("Publish + Flush of a %d MiB event: %v", bigSize>>20, time.Since(start))
	if async.DataRef != "" || !bytes.Equal(async.Data, asyncData) {
		t.Errorf("Publish changed the caller's event: DataRef %q, %d bytes of data", async.DataRef, len(async.Data))
	}
	start = time.Now()
	if err := b.PublishSync(ctx, syncEv); err != nil {
		t.Fatal(err)
	}
	t.Logf("PublishSync of a %d MiB event: %v", bigSize>>20, time.Since(start))
	if err := b.PublishSync(ctx, small); err != nil {
		t.Fatal(err)
	}
	checkStub(t, b, async)
	checkStub(t, b, syncEv)
	if m := rawMsg(t, b, small.ID); m.Header.Get("ce-dataref") != "" || !bytes.Equal(m.Data, small.Data) {
		t.Errorf("small event stored with dataref %q and body %q", m.Header.Get("ce-dataref"), m.Data)
	}
	if got := objects(t, b); len(got) != 2 {
		t.Errorf("payload objects %v, want the two large events' only", got)
	}

	start = time.Now()
	var replayed []*events.Event
	st, err := b.Replay(ctx, bus.Filter{Agent: agent, Session: session}, func(e *events.Event) error {
		replayed = append(replayed, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Replay of 2 x %d MiB + 1 small event: %v", bigSize>>20, time.Since(start))
	if st.Events != 3 || st.Unfetched != 0 || st.Malformed != 0 || len(replayed) != 3 {
		t.Fatalf("replay stats %+v, %d events", st, len(replayed))
	}
	checkFetched(t, b, "Replay", replayed[0], async)
	checkFetched(t, b, "Replay", replayed[1], syncEv)
	if replayed[2].DataRef != "" || !bytes.Equal(replayed[2].Data, small.Data) {
		t.Errorf("Replay: small event DataRef %q data %q", replayed[2].DataRef, replayed[2].Data)
	}

	session1, err := b.SessionEvents(ctx, agent, session)
	if err != nil || len(session1) != 3 {
		t.Fatalf("SessionEvents: %d events, %v", len(session1), err)
	}
	checkFetched(t, b, "SessionEvents", session1[0], async)
	checkFetched(t, b, "SessionEvents", session1[1], syncEv)

	var (
		obsMu    sync.Mutex
		observed = map[string]*events.Event{}
	)
	o, err := b.Observe(ctx, bus.ObserveConfig{Durable: "big-reader", Agent: agent}, func(_ context.Context, e *events.Event) error {
		obsMu.Lock()
		observed[e.ID] = e
		obsMu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Stop()
	bustest.Eventuallyf(t, 90*time.Second, func() bool { return o.Stats().Acked == 3 }, "observer acks 3 events (stats %+v)", o.Stats())
	obsMu.Lock()
	checkFetched(t, b, "Observe", observed[async.ID], async)
	checkFetched(t, b, "Observe", observed[syncEv.ID], syncEv)
	obsMu.Unlock()
	if s := o.Stats(); s.Unfetched != 0 || s.Naked != 0 || s.Malformed != 0 {
		t.Errorf("observer stats %+v", s)
	}

	bustest.Eventuallyf(t, 90*time.Second, func() bool {
		tailMu.Lock()
		defer tailMu.Unlock()
		return len(tailed) == 3
	}, "Tail gets 3 events")
	stopTail()
	if err := <-tailErr; err != nil {
		t.Fatalf("Tail: %v", err)
	}
	checkFetched(t, b, "Tail", tailed[0], async)
	checkFetched(t, b, "Tail", tailed[1], syncEv)

	// A terminal event with a large answer: WaitRun gets it whole.
	answer := strings.Repeat("a", 2<<20)
	done, err := events.New(events.StageRunCompleted, events.Meta{
		Source: "hookbus/test", AgentID: agent, SessionID: session, RunID: run, Step: 1, Seq: 4,
	}, events.RunCompleted{Reason: events.ReasonDone, Answer: answer})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.PublishSync(ctx, done); err != nil {
		t.Fatal(err)
	}
	end, err := b.WaitRun(ctx, agent, session, run)
	if err != nil {
		t.Fatal(err)
	}
	var rc events.RunCompleted
	if err := end.DecodeData(&rc); err != nil || rc.Answer != answer || end.DataRef == "" {
		t.Errorf("WaitRun: answer of %d bytes, DataRef %q, err %v", len(rc.Answer), end.DataRef, err)
	}
}

// A small event is sent as it always was: no dataref, no object.
func TestClaimCheckLeavesSmallEvents(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := bigCtx(t)
	e := sizedEvent(t, "a", "s", "r", 1, 512<<10) // half a MiB: fits
	if err := b.PublishSync(ctx, e); err != nil {
		t.Fatal(err)
	}
	m := rawMsg(t, b, e.ID)
	if m.Header.Get("ce-dataref") != "" || !bytes.Equal(m.Data, e.Data) {
		t.Errorf("stored with dataref %q and %d bytes of body, want the data inline", m.Header.Get("ce-dataref"), len(m.Data))
	}
	if got := objects(t, b); len(got) != 0 {
		t.Errorf("payload objects %v, want none", got)
	}
	// An event read back from a claim check and published again under
	// another id carries its data inline when it fits: the stale dataref
	// goes.
	again := e.Clone()
	again.ID = events.NewID()
	again.DataRef = "hookbus_payloads/evt/" + e.ID + "/0"
	if err := b.PublishSync(ctx, again); err != nil {
		t.Fatal(err)
	}
	if m := rawMsg(t, b, again.ID); m.Header.Get("ce-dataref") != "" || !bytes.Equal(m.Data, e.Data) {
		t.Errorf("republished with dataref %q and %d bytes of body", m.Header.Get("ce-dataref"), len(m.Data))
	}
}

// With a payload limit below the server's, the limit decides; an event
// that does not fit even without its data is refused.
func TestClaimCheckPayloadLimit(t *testing.T) {
	_, nc := bustest.Start(t)
	b := bustest.Provision(t, nc, bus.WithMaxPayload(4096))
	ctx := bigCtx(t)
	e := sizedEvent(t, "a", "s", "r", 1, 8192)
	if err := b.Publish(ctx, e); err != nil {
		t.Fatalf("Publish 8 KiB with a 4 KiB limit: %v", err)
	}
	if err := b.Flush(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	if m := rawMsg(t, b, e.ID); len(m.Data) != 0 || m.Header.Get("ce-dataref") != ref(b, e) {
		t.Errorf("8 KiB event stored with %d bytes of body, dataref %q", len(m.Data), m.Header.Get("ce-dataref"))
	}
	tiny := bustest.Provision(t, nc, bus.WithMaxPayload(200))
	if err := tiny.PublishSync(ctx, testEvent(t, "a", "s", "r", events.StageStepStarted, 2)); !errors.Is(err, bus.ErrPayloadTooLarge) {
		t.Fatalf("an event whose headers exceed the limit: %v, want ErrPayloadTooLarge", err)
	}
}

// Publishing one large event again stores one message and one object, and
// writes no chunk again.
func TestClaimCheckRepublishIsIdempotent(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := bigCtx(t)
	e := sizedEvent(t, "a", "s", "r", 1, bigSize)
	if err := b.PublishSync(ctx, e); err != nil {
		t.Fatal(err)
	}
	obs := payloadStore(t, b)
	before, err := obs.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Sent again by a caller, it is reported (the stream already held the
	// id), and stores nothing new.
	if err := b.PublishSync(ctx, e); !errors.Is(err, bus.ErrDuplicate) {
		t.Fatalf("PublishSync again = %v, want ErrDuplicate", err)
	}
	if err := b.Publish(ctx, e.Clone()); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(ctx, "r"); !errors.Is(err, bus.ErrDuplicate) {
		t.Fatalf("Flush after Publish again = %v, want ErrDuplicate", err)
	}
	after, err := obs.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := streamMsgs(t, b); n != 1 {
		t.Errorf("events stream holds %d messages, want 1", n)
	}
	if got := objects(t, b); len(got) != 1 || got[0] != bus.ObjectName(e.ID, e.Data) {
		t.Errorf("payload objects %v, want [%s]", got, bus.ObjectName(e.ID, e.Data))
	}
	if before.Size() != after.Size() {
		t.Errorf("payload store grew from %d to %d bytes on a republish", before.Size(), after.Size())
	}
}

// When an object is gone (expired, deleted) its event still reaches the
// readers, without data: DecodeData and FetchData name the reference,
// Replay and the observer count it, and the events after it are read.
func TestClaimCheckMissingObject(t *testing.T) {
	srv, nc := bustest.Start(t)
	var logMu sync.Mutex
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, nil))
	b := bustest.Provision(t, nc, bus.WithLogger(log))
	ctx := bigCtx(t)
	lost := sizedEvent(t, "a", "s", "r", 1, bigSize)
	kept := sizedEvent(t, "a", "s", "r", 3, bigSize)
	erasablePayloads(t, b)
	publishAll(t, b, lost, testEvent(t, "a", "s", "r", events.StageStepCompleted, 2), kept)
	if err := payloadStore(t, b).Delete(ctx, bus.ObjectName(lost.ID, lost.Data)); err != nil {
		t.Fatal(err)
	}
	// A reference outside the payloads bucket is never followed.
	foreign := testEvent(t, "a", "s", "r", events.StageToolAfter, 4)
	foreign.Data, foreign.DataRef = nil, "elsewhere/secret"
	h, body, err := events.Encode(foreign)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.JetStream().PublishMsg(ctx, &nats.Msg{Subject: "hookbus.evt.a.s.tool.after", Header: nats.Header(h), Data: body}); err != nil {
		t.Fatal(err)
	}

	var got []*events.Event
	st, err := b.Replay(ctx, bus.Filter{Agent: "a"}, func(e *events.Event) error {
		got = append(got, e)
		return nil
	})
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	if st.Events != 4 || st.Unfetched != 2 || len(got) != 4 {
		t.Fatalf("replay stats %+v, want 4 events, 2 unfetched", st)
	}
	missing := got[0]
	if len(missing.Data) != 0 || missing.DataRef != ref(b, lost) {
		t.Fatalf("lost event: %d bytes of data, DataRef %q", len(missing.Data), missing.DataRef)
	}
	var p events.ToolAfter
	if err := missing.DecodeData(&p); !errors.Is(err, events.ErrPayload) || !strings.Contains(err.Error(), missing.DataRef) {
		t.Errorf("DecodeData of the lost event: %v, want ErrPayload naming %s", err, missing.DataRef)
	}
	err = b.FetchData(ctx, missing)
	if !errors.Is(err, bus.ErrClaimCheck) || !errors.Is(err, jetstream.ErrObjectNotFound) || !strings.Contains(err.Error(), missing.DataRef) {
		t.Errorf("FetchData of the lost event: %v, want ErrClaimCheck, ErrObjectNotFound, naming %s", err, missing.DataRef)
	}
	if err := b.FetchData(ctx, got[3]); !errors.Is(err, bus.ErrClaimCheck) || !strings.Contains(err.Error(), "elsewhere/secret") {
		t.Errorf("FetchData of a foreign reference: %v", err)
	}
	checkFetched(t, b, "Replay after a lost object", got[2], kept)
	logMu.Lock()
	if !strings.Contains(logs.String(), "dataref="+missing.DataRef) {
		t.Errorf("the log does not name the lost reference:\n%s", logs.String())
	}
	logMu.Unlock()

	// A durable observer: the lost event is handled (without data) and
	// acked, counted as unfetched; the others come whole.
	var (
		mu       sync.Mutex
		observed = map[string]int{}
	)
	o, err := b.Observe(ctx, bus.ObserveConfig{Durable: "lossy", Agent: "a"}, func(_ context.Context, e *events.Event) error {
		mu.Lock()
		observed[e.ID] = len(e.Data)
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Stop()
	bustest.Eventuallyf(t, 90*time.Second, func() bool { return o.Stats().Acked == 4 }, "observer acks 4 events (stats %+v)", o.Stats())
	if s := o.Stats(); s.Unfetched != 2 || s.Naked != 0 {
		t.Errorf("observer stats %+v, want 2 unfetched, none naked", s)
	}
	mu.Lock()
	if observed[lost.ID] != 0 || observed[kept.ID] != len(kept.Data) {
		t.Errorf("observer saw %d and %d bytes", observed[lost.ID], observed[kept.ID])
	}
	mu.Unlock()

	// The loop's session rebuild reads the same.
	evs, err := bustest.Provision(t, bustest.Conn(t, srv)).SessionEvents(ctx, "a", "s")
	if err != nil || len(evs) != 4 {
		t.Fatalf("SessionEvents: %d events, %v", len(evs), err)
	}
}

// bigCtx bounds a test that moves several MiB through the object store:
// under the race detector on a busy machine that takes far longer than the
// small events' 30 s, and the bound only says when to give up.
func bigCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
