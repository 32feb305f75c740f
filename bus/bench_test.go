package bus_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// benchPayload is the size of the events' JSON data in the benchmarks.
const benchPayload = 1024

// cpuPerOp starts measuring the process' CPU time; the returned function
// reports it per op as "cpu-ns/op" (client and embedded server together).
func cpuPerOp(b *testing.B) func() {
	start := processCPU()
	return func() {
		if d := processCPU() - start; d > 0 && b.N > 0 {
			b.ReportMetric(float64(d.Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	}
}

// benchRing is how many distinct messages the publish benchmarks cycle
// through; each publish still carries a new event id.
const benchRing = 8192

// benchIDs returns n new event ids.
func benchIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = events.NewID()
	}
	return out
}

// BenchmarkPublish measures bus.Publish (encode, async publish, per-run ack
// tracking) of 1 KiB events, then a Flush of the run: ns/op is per event.
// Compare with BenchmarkRawPublishAsync.
func BenchmarkPublish(b *testing.B) {
	_, nc := bustest.Start(b)
	bs := bustest.Provision(b, nc)
	ring := make([]*events.Event, benchRing)
	for i := range ring {
		ring[i] = sizedEvent(b, "agent", "sess", "run1", uint64(i), benchPayload)
	}
	ids := benchIDs(b.N)
	ctx := context.Background()
	b.SetBytes(benchPayload)
	b.ResetTimer()
	defer cpuPerOp(b)()
	for i, id := range ids {
		e := ring[i%benchRing]
		e.ID = id // the bus keeps no reference to the event after Publish
		if err := bs.Publish(ctx, e); err != nil {
			b.Fatal(err)
		}
	}
	if err := bs.Flush(ctx, "run1"); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRawPublishAsync is the baseline: raw nats.go
// jetstream.PublishMsgAsync of the same encoded messages (same subject,
// headers, Nats-Msg-Id and body; the ids are set in place), then waiting for
// every ack.
func BenchmarkRawPublishAsync(b *testing.B) {
	_, nc := bustest.Start(b)
	bs := bustest.Provision(b, nc)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	ring := make([]*nats.Msg, benchRing)
	for i := range ring {
		e := sizedEvent(b, "agent", "sess", "run1", uint64(i), benchPayload)
		hdr, body, err := events.Encode(e)
		if err != nil {
			b.Fatal(err)
		}
		subj, _ := bs.Subjects().Event(e.AgentID, e.SessionID, e.Stage)
		ring[i] = &nats.Msg{Subject: subj, Header: nats.Header(hdr), Data: body}
	}
	ids := benchIDs(b.N)
	b.SetBytes(benchPayload)
	b.ResetTimer()
	defer cpuPerOp(b)()
	for i, id := range ids {
		m := ring[i%benchRing]
		m.Header[events.HeaderMsgID][0] = id
		m.Header["ce-id"][0] = id
		for { // wait for room as bus.Publish does
			_, err := js.PublishMsgAsync(m)
			if err == nil {
				break
			}
			if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
				b.Fatal(err)
			}
		}
	}
	<-js.PublishAsyncComplete()
}

// replayStreamLen is how many events the replay benchmarks' stream holds;
// a benchmark reads it as many times as b.N needs.
const replayStreamLen = 20000

// replayBus returns a bus whose events stream holds replayStreamLen 1 KiB
// events of one session.
func replayBus(b *testing.B) *bus.Bus {
	_, nc := bustest.Start(b)
	bs := bustest.Provision(b, nc)
	ctx := context.Background()
	tmpl := sizedEvent(b, "agent", "sess", "run1", 0, benchPayload)
	for i := 0; i < replayStreamLen; i++ {
		e := *tmpl
		e.ID, e.Seq = events.NewID(), uint64(i)
		if err := bs.Publish(ctx, &e); err != nil {
			b.Fatal(err)
		}
	}
	if err := bs.Flush(ctx, "run1"); err != nil {
		b.Fatal(err)
	}
	return bs
}

var errEnough = errors.New("enough")

// BenchmarkReplay measures bus.Replay of a session (ordered consumer,
// decode, filter): ns/op is per event. Compare with
// BenchmarkRawOrderedConsumer.
func BenchmarkReplay(b *testing.B) {
	bs := replayBus(b)
	ctx := context.Background()
	b.SetBytes(benchPayload)
	b.ResetTimer()
	defer cpuPerOp(b)()
	for left := b.N; left > 0; {
		n := 0
		want := min(left, replayStreamLen)
		_, err := bs.Replay(ctx, bus.Filter{Agent: "agent", Session: "sess"}, func(e *events.Event) error {
			if n++; n == want {
				return errEnough
			}
			return nil
		})
		if err != errEnough {
			b.Fatalf("replay: %v after %d events", err, n)
		}
		left -= n
	}
}

// BenchmarkRawOrderedConsumer is the baseline: a raw nats.go ordered
// consumer with the same filter over the same stream, reading the same
// number of messages.
func BenchmarkRawOrderedConsumer(b *testing.B) {
	bs := replayBus(b)
	js, err := jetstream.New(bs.Conn())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.SetBytes(benchPayload)
	b.ResetTimer()
	defer cpuPerOp(b)()
	for left := b.N; left > 0; {
		want := min(left, replayStreamLen)
		c, err := js.OrderedConsumer(ctx, bs.Names().Events, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{"hookbus.evt.agent.sess.>"},
		})
		if err != nil {
			b.Fatal(err)
		}
		it, err := c.Messages()
		if err != nil {
			b.Fatal(err)
		}
		for n := 0; n < want; n++ {
			if _, err := it.Next(jetstream.NextContext(ctx)); err != nil {
				b.Fatal(err)
			}
		}
		it.Stop()
		left -= want
	}
}

// BenchmarkRawOrderedConsume is BenchmarkRawOrderedConsumer with Consume
// (callbacks) instead of the Messages iterator, to check the baseline is
// the faster of the two.
func BenchmarkRawOrderedConsume(b *testing.B) {
	bs := replayBus(b)
	js, err := jetstream.New(bs.Conn())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.SetBytes(benchPayload)
	b.ResetTimer()
	defer cpuPerOp(b)()
	for left := b.N; left > 0; {
		want := min(left, replayStreamLen)
		c, err := js.OrderedConsumer(ctx, bs.Names().Events, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{"hookbus.evt.agent.sess.>"},
		})
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan struct{})
		n := 0
		cc, err := c.Consume(func(jetstream.Msg) {
			if n++; n == want {
				close(done)
			}
		})
		if err != nil {
			b.Fatal(err)
		}
		<-done
		cc.Stop()
		left -= want
	}
}
