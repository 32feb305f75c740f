package natsconf_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestLoopDoesWhatAWorkerDoes drives the loop user through what a worker
// does with nats.go, against the assets bus.Provision made: publish events
// and dead letters, replay a session, read and write and watch the
// registry, read and watch the trust grants, store and read a large
// payload, take a run request from the work queue and ack it. Each call
// must succeed and, at the end, the server must have reported no
// permission error at all on the connection: the allow list covers the
// JetStream API these clients use (KV watchers and object reads included,
// which use the older push consumers and flow control).
func TestLoopDoesWhatAWorkerDoes(t *testing.T) {
	f := startSingle(t)
	admin, _ := f.connect(t, "admin")
	loop, _ := f.connect(t, "loop")
	ctx := testContext(t)
	js := jetStream(t, loop)

	if _, err := js.AccountInfo(ctx); err != nil {
		t.Fatalf("account info: %v", err)
	}
	for _, name := range []string{"HOOKBUS_EVENTS", "HOOKBUS_RUNS", "HOOKBUS_WAKES", "HOOKBUS_DLQ", "KV_hookbus_hooks", "KV_hookbus_trust", "OBJ_hookbus_payloads"} {
		if _, err := js.Stream(ctx, name); err != nil {
			t.Fatalf("stream info %s: %v", name, err)
		}
	}

	// Events (an expiry's approval.resolved on the plain subject among
	// them) and dead letters.
	for _, subj := range []string{"hookbus.evt.agent1.session1.intake", "hookbus.evt.agent1.session1.approval.resolved", "hookbus.evt.agent1.session1.run.completed"} {
		if _, err := js.Publish(ctx, subj, []byte(`{}`)); err != nil {
			t.Fatalf("publish %s: %v", subj, err)
		}
	}
	if ack, err := js.Publish(ctx, "hookbus.dlq.billing", []byte(`{}`)); err != nil || ack.Stream != "HOOKBUS_DLQ" {
		t.Fatalf("dead letter: %v, %v", ack, err)
	}
	// The last event of a session (fencing reads it), then the session
	// rebuild: an ordered consumer filtered to one session.
	evs, err := js.Stream(ctx, "HOOKBUS_EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	if m, err := evs.GetLastMsgForSubject(ctx, "hookbus.evt.agent1.session1.intake"); err != nil || m.Sequence != 1 {
		t.Fatalf("last intake of session1: %v, %v", m, err)
	}
	cons, err := js.OrderedConsumer(ctx, "HOOKBUS_EVENTS", jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{"hookbus.evt.agent1.session1.>"},
	})
	if err != nil {
		t.Fatalf("ordered consumer: %v", err)
	}
	for _, want := range []string{"hookbus.evt.agent1.session1.intake", "hookbus.evt.agent1.session1.approval.resolved", "hookbus.evt.agent1.session1.run.completed"} {
		m, err := cons.Next(jetstream.FetchMaxWait(wait))
		if err != nil || m.Subject() != want {
			t.Fatalf("replay: %v, %v; want %s", m, err, want)
		}
	}

	// Registry: put, get, watch, delete.
	hooks, err := js.KeyValue(ctx, "hookbus_hooks")
	if err != nil {
		t.Fatalf("registry bucket: %v", err)
	}
	reg := []byte(`{"plugin":"plugin-pii","stage":"tool.before"}`)
	if _, err := hooks.Put(ctx, "tool-before.plugin-pii", reg); err != nil {
		t.Fatalf("registry put: %v", err)
	}
	if e, err := hooks.Get(ctx, "tool-before.plugin-pii"); err != nil || !bytes.Equal(e.Value(), reg) {
		t.Fatalf("registry get: %v, %v", e, err)
	}
	firstUpdate(t, ctx, hooks, reg)
	if err := hooks.Delete(ctx, "tool-before.plugin-pii"); err != nil {
		t.Fatalf("registry delete: %v", err)
	}
	// (No purge of the registry's stream: a purge could erase a kill-switch
	// entry, which the loop may not touch.)

	// Trust grants: written by the admin, read and watched by the loop.
	grant := []byte(`{"privileged_hooks":true}`)
	adminTrust, err := jetStream(t, admin).KeyValue(ctx, "hookbus_trust")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := adminTrust.Put(ctx, "plugin-policy", grant); err != nil {
		t.Fatalf("grant as admin: %v", err)
	}
	trust, err := js.KeyValue(ctx, "hookbus_trust")
	if err != nil {
		t.Fatalf("trust bucket: %v", err)
	}
	if e, err := trust.Get(ctx, "plugin-policy"); err != nil || !bytes.Equal(e.Value(), grant) {
		t.Fatalf("trust get: %v, %v", e, err)
	}
	firstUpdate(t, ctx, trust, grant)

	// Large payloads: put (as hookbus writes them: once, without a
	// roll-up), read back with nats.go's object store.
	obs, err := js.ObjectStore(ctx, "hookbus_payloads")
	if err != nil {
		t.Fatalf("object store: %v", err)
	}
	lb, err := bus.New(loop)
	if err != nil {
		t.Fatal(err)
	}
	payload := largePayload()
	if err := lb.ClaimCheck().PutData(ctx, "01JPAYLOAD", payload, jetstream.ObjectMeta{Name: "01JPAYLOAD"}); err != nil {
		t.Fatalf("object put: %v", err)
	}
	if got, err := obs.GetBytes(ctx, "01JPAYLOAD"); err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("object get: %d bytes, %v", len(got), err)
	}

	// The run queue: submit, take with the workers' durable, ack.
	if ack, err := js.Publish(ctx, "hookbus.run.agent1", []byte(`{"prompt":"hi"}`)); err != nil || ack.Stream != "HOOKBUS_RUNS" {
		t.Fatalf("submit run: %v, %v", ack, err)
	}
	workers, err := js.CreateOrUpdateConsumer(ctx, "HOOKBUS_RUNS", jetstream.ConsumerConfig{
		Durable: "workers", AckPolicy: jetstream.AckExplicitPolicy,
	})
	if err != nil {
		t.Fatalf("workers consumer: %v", err)
	}
	run, err := workers.Next(jetstream.FetchMaxWait(wait))
	if err != nil {
		t.Fatalf("take run: %v", err)
	}
	if err := run.DoubleAck(ctx); err != nil {
		t.Fatalf("ack run: %v", err)
	}
	eventually(t, "the acked run request leaves the work queue", func() bool {
		return streamMsgs(t, jetStream(t, admin), "HOOKBUS_RUNS") == 0
	})

	// Wake-ups: schedule one (HOOKBUS_WAKES, message schedules) and take
	// it when it is due; and who this connection is.
	lb, err = bus.New(loop, bus.WithDefaultTimeout(wait))
	if err != nil {
		t.Fatal(err)
	}
	due := make(chan events.Wake, 1)
	wc, err := runs.New(lb).ConsumeWakes(ctx, runs.WakeConsumerConfig{Agent: "agent1"}, func(_ context.Context, w events.Wake) error {
		due <- w
		return nil
	})
	if err != nil {
		t.Fatalf("wake consumer: %v", err)
	}
	defer wc.Stop()
	if err := runs.New(lb).WakeAt(ctx, events.Wake{RunID: "r1", AgentID: "agent1", SessionID: "session1", At: time.Now().Add(time.Second)}); err != nil {
		t.Fatalf("schedule a wake-up: %v", err)
	}
	select {
	case w := <-due:
		if w.RunID != "r1" {
			t.Fatalf("wake-up %+v", w)
		}
	case <-timeAfter(t):
		t.Fatal("the wake-up was not delivered when due")
	}
	if me, err := lb.WhoAmI(ctx); err != nil || me.User != "loop" || me.Via != "nats" {
		t.Fatalf("who am I, as loop: %+v, %v", me, err)
	}

	noErrors(t, loop)
}

// TestLoopCannotGrantTrustOrRewriteTheAuditTrail: the loop user cannot
// write a trust grant, create or reconfigure streams (an update could add
// a republish into the trust bucket), purge or delete them, read the
// dead letters, or subscribe to interception subjects in a plugin's place.
func TestLoopCannotGrantTrustOrRewriteTheAuditTrail(t *testing.T) {
	f := startSingle(t)
	loop, errs := f.connect(t, "loop")
	for _, subj := range []string{
		"$KV.hookbus_trust.plugin-pii",
		"$JS.API.STREAM.UPDATE.HOOKBUS_EVENTS",
		"$JS.API.STREAM.UPDATE.KV_hookbus_trust",
		"$JS.API.STREAM.UPDATE.KV_hookbus_hooks",
		"$JS.API.STREAM.PURGE.HOOKBUS_EVENTS",
		"$JS.API.STREAM.PURGE.KV_hookbus_trust",
		"$JS.API.STREAM.DELETE.HOOKBUS_EVENTS",
		"$JS.API.STREAM.DELETE.KV_hookbus_trust",
		"$JS.API.STREAM.MSG.DELETE.HOOKBUS_EVENTS",
		"$JS.API.STREAM.CREATE.HOOKBUS_EVENTS",
		"$JS.API.STREAM.CREATE.KV_hookbus_trust",
		"$JS.API.STREAM.CREATE.EVIL",
		"$JS.API.CONSUMER.CREATE.HOOKBUS_DLQ.redrive",
		"$JS.API.META.LEADER.STEPDOWN",
	} {
		denyPublish(t, loop, errs, subj)
	}
	for _, subj := range []string{"hookbus.hook.>", "hookbus.hook.context.assembled.plugin-policy"} {
		if _, err := loop.QueueSubscribe(subj, "plugin-policy", func(*nats.Msg) {}); err != nil {
			t.Fatal(err)
		}
		errs.wantViolation(t, "Subscription to", subj)
	}

	admin, _ := f.connect(t, "admin")
	trust, err := jetStream(t, admin).KeyValue(testContext(t), "hookbus_trust")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := trust.Get(testContext(t), "plugin-pii"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("trust grant for plugin-pii: %v, want none", err)
	}
}

// largePayload is big enough (2 MB, 16 chunks of 128 KB) that reading it
// back through the object store's push consumer needs flow-control
// replies.
func largePayload() []byte {
	b := make([]byte, 2<<20)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}

// firstUpdate watches key-value bucket kv and asserts its first update
// carries want (a watcher delivers the current values first).
func firstUpdate(t *testing.T, ctx context.Context, kv jetstream.KeyValue, want []byte) {
	t.Helper()
	w, err := kv.WatchAll(ctx)
	if err != nil {
		t.Fatalf("watch %s: %v", kv.Bucket(), err)
	}
	defer func() { _ = w.Stop() }()
	select {
	case e := <-w.Updates():
		if e == nil || !bytes.Equal(e.Value(), want) {
			t.Fatalf("watch %s: first update %v", kv.Bucket(), e)
		}
	case <-timeAfter(t):
		t.Fatalf("watch %s: no update", kv.Bucket())
	}
}

// readOrdered reads the first message of stream through an ordered
// consumer (optionally filtered) and decodes it as a hookbus event. It
// iterates with Messages, as a tail or a replay does (Next and Fetch on an
// ordered consumer delete and recreate the server-side consumer at every
// call).
func readOrdered(t *testing.T, js jetstream.JetStream, stream string, filter []string) *events.Event {
	t.Helper()
	cons, err := js.OrderedConsumer(testContext(t), stream, jetstream.OrderedConsumerConfig{FilterSubjects: filter})
	if err != nil {
		t.Fatalf("ordered consumer on %s (filter %v): %v", stream, filter, err)
	}
	it, err := cons.Messages()
	if err != nil {
		t.Fatalf("messages on %s: %v", stream, err)
	}
	defer it.Stop()
	got := make(chan jetstream.Msg, 1)
	go func() {
		if m, err := it.Next(); err == nil {
			got <- m
		}
	}()
	var m jetstream.Msg
	select {
	case m = <-got:
	case <-timeAfter(t):
		t.Fatalf("no message on %s (filter %v)", stream, filter)
	}
	e, err := events.Decode(events.Header(m.Headers()), m.Data())
	if err != nil {
		t.Fatalf("decode %s: %v", m.Subject(), err)
	}
	return e
}

func jetStream(t *testing.T, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func streamMsgs(t *testing.T, js jetstream.JetStream, name string) uint64 {
	t.Helper()
	s, err := js.Stream(testContext(t), name)
	if err != nil {
		t.Fatalf("stream %s: %v", name, err)
	}
	return s.CachedInfo().State.Msgs
}

// testContext is bounded by wait and canceled when the test ends.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	t.Cleanup(cancel)
	return ctx
}

// timeAfter fires after wait.
func timeAfter(t *testing.T) <-chan time.Time {
	timer := time.NewTimer(wait)
	t.Cleanup(func() { timer.Stop() })
	return timer.C
}
