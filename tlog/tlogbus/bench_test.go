package tlogbus_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/tlog"
	"github.com/hookbus/hookbus/tlog/tlogbus"
)

// benchPayload is the size of the events' data, as in bus' benchmarks.
const benchPayload = 1024

// benchEvent is bus' benchmark event: a 1 KiB tool.after.
func benchEvent(b testing.TB, run string, seq uint64) *events.Event {
	b.Helper()
	e, err := events.New(events.StageToolAfter, events.Meta{
		Source: "hookbus/bench", AgentID: "agent", SessionID: "sess", RunID: run, Step: 1, Seq: seq,
	}, events.ToolAfter{Result: events.ToolResult{CallID: "c1", Name: "search", Content: strings.Repeat("x", benchPayload)}})
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkPublishCheckpointed is bus' BenchmarkPublish (bus.Publish of 1
// KiB events, then a Flush; ns/op is per event) with a checkpointer
// following the stream on its own connection, checkpointing every 1000
// events. Compare with BenchmarkPublish and BenchmarkRawPublishAsync (make
// bench). behind-events is how far the checkpointer was behind when the
// publishing ended, catchup-ns how long it then took to cover the stream.
func BenchmarkPublishCheckpointed(b *testing.B) {
	srv, nc := bustest.Start(b)
	bs := bustest.Provision(b, nc)
	cb, err := bus.New(bustest.Conn(b, srv))
	if err != nil {
		b.Fatal(err)
	}
	key := newLogKey(b, logName)
	r := startCheckpointer(b, cb, tlogbus.CheckpointerConfig{Signer: key.signer, Verifier: key.verifier, Interval: 100 * time.Millisecond})
	const ring = 8192
	evs := make([]*events.Event, ring)
	for i := range evs {
		evs[i] = benchEvent(b, "run1", uint64(i))
	}
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = events.NewID()
	}
	ctx := context.Background()
	b.SetBytes(benchPayload)
	b.ResetTimer()
	for i, id := range ids {
		e := evs[i%ring]
		e.ID = id
		if err := bs.Publish(ctx, e); err != nil {
			b.Fatal(err)
		}
	}
	if err := bs.Flush(ctx, "run1"); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	st, err := bs.EventsState(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(st.LastSeq-min(st.LastSeq, r.c.Status().Read)), "behind-events")
	start := time.Now()
	r.caughtUp(b, bs)
	b.ReportMetric(float64(time.Since(start).Nanoseconds()), "catchup-ns")
}

// verifyStreamLen is how many events BenchmarkVerifyStream's stream holds:
// runs of 16 events.
const (
	verifyStreamLen = 100_000
	verifyRunLen    = 16
)

// BenchmarkVerifyStream measures observer verify --checkpoint's work on a
// stream of 100,000 1 KiB events checkpointed every 1000: reading every
// message, recomputing its leaf and the tree, comparing with the stored
// checkpoints (ns/op is per verification of the whole stream; events/s).
// It reports what the setup measured too: checkpoint-ns, the time a
// checkpointer took to cover the stream from scratch, and the proof of a
// run of 16 events in the middle of the stream (observer prove):
// proof-bytes, proof-bytes/event and path-hashes (an inclusion path's
// length).
func BenchmarkVerifyStream(b *testing.B) {
	bs := bustest.StartBus(b)
	ctx := context.Background()
	var run, middle string
	for i := range verifyStreamLen {
		if i%verifyRunLen == 0 {
			run = events.NewID()
		}
		if i == verifyStreamLen/2 {
			middle = run
		}
		e := benchEvent(b, run, uint64(i%verifyRunLen)+1)
		if err := bs.Publish(ctx, e); err != nil {
			b.Fatal(err)
		}
		if i%verifyRunLen == verifyRunLen-1 {
			if err := bs.Flush(ctx, run); err != nil {
				b.Fatal(err)
			}
		}
	}
	key := newLogKey(b, logName)
	start := time.Now()
	checkpointAll(b, bs, tlogbus.CheckpointerConfig{Signer: key.signer, Verifier: key.verifier, Interval: 100 * time.Millisecond})
	checkpointNs := time.Since(start).Nanoseconds()

	p, _, err := tlogbus.Prove(ctx, bs, middle, tlogbus.VerifyConfig{LogKey: key.verifier})
	if err != nil {
		b.Fatal(err)
	}
	proof, err := json.Marshal(p)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tlog.VerifyProof(proof, key.verifier); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		v, err := tlogbus.VerifyStream(ctx, bs, tlogbus.VerifyConfig{LogKey: key.verifier})
		if err != nil || !v.Intact || v.Compared != verifyStreamLen {
			b.Fatalf("verify: %+v, %v", v, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(verifyStreamLen)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(checkpointNs), "checkpoint-ns")
	b.ReportMetric(float64(len(proof)), "proof-bytes")
	b.ReportMetric(float64(len(proof))/float64(len(p.Entries)), "proof-bytes/event")
	b.ReportMetric(float64(len(p.Entries[0].Inclusion)), "path-hashes")
}
