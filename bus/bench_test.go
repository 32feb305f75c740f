package bus_test

import (
	"context"
	"testing"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// benchPayload is the size of the events' JSON data in the benchmarks.
const benchPayload = 1024

// BenchmarkPublish measures bus.Publish (encode + async publish + per-run
// ack tracking) and a final Flush. Compare with BenchmarkRawPublishAsync.
func BenchmarkPublish(b *testing.B) {
	_, nc := bustest.Start(b)
	bs := bustest.Provision(b, nc)
	evs := make([]*events.Event, b.N)
	for i := range evs {
		evs[i] = sizedEvent(b, "agent", "sess", "run1", uint64(i), benchPayload)
	}
	ctx := context.Background()
	b.SetBytes(benchPayload)
	b.ResetTimer()
	for _, e := range evs {
		if err := bs.Publish(ctx, e); err != nil {
			b.Fatal(err)
		}
	}
	if err := bs.Flush(ctx, "run1"); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRawPublishAsync is the baseline: raw nats.go
// jetstream.PublishMsgAsync of the same encoded messages (same headers,
// Nats-Msg-Id and body), then waiting for every ack.
func BenchmarkRawPublishAsync(b *testing.B) {
	_, nc := bustest.Start(b)
	bs := bustest.Provision(b, nc)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	msgs := make([]*nats.Msg, b.N)
	for i := range msgs {
		e := sizedEvent(b, "agent", "sess", "run1", uint64(i), benchPayload)
		hdr, body, err := events.Encode(e)
		if err != nil {
			b.Fatal(err)
		}
		subj, _ := bs.Subjects().Event(e.AgentID, e.SessionID, e.Stage)
		msgs[i] = &nats.Msg{Subject: subj, Header: nats.Header(hdr), Data: body}
	}
	b.SetBytes(benchPayload)
	b.ResetTimer()
	for _, m := range msgs {
		if _, err := js.PublishMsgAsync(m); err != nil {
			b.Fatal(err)
		}
	}
	<-js.PublishAsyncComplete()
}

func BenchmarkEncode(b *testing.B) {
	e := sizedEvent(b, "agent", "sess", "run1", 1, benchPayload)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := events.Encode(e); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	e := sizedEvent(b, "agent", "sess", "run1", 1, benchPayload)
	h, body, _ := events.Encode(e)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := events.Decode(h, body); err != nil {
			b.Fatal(err)
		}
	}
}
