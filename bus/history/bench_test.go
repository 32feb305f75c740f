package history_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/history"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/policy"
)

// BenchmarkSessionSeen asks session.seen of a session of n calls once it
// is caught up: a question costs one read of the session's last call from
// the stream's leader and the memo's check, whatever the session's length.
func BenchmarkSessionSeen(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("calls=%d", n), func(b *testing.B) {
			bb := bustest.StartBus(b)
			ctx := testCtx(b)
			r := newRecorder(bb, "coder", "s1", t0)
			for i := range n {
				a := shell(fmt.Sprintf("ls %d", i))
				if i%3 == 0 {
					a = read(fmt.Sprintf("/repo/file%d.go", i))
				}
				r.record(b, "r1", a)
			}
			h := history.New(bb)
			scope := policy.Scope{Agent: "coder", Session: "s1", Event: &events.Event{}}
			if seen, err := h.SessionSeen(ctx, scope, "file.read", `(^|/)\.env$`); err != nil || seen {
				b.Fatalf("seen = %v, %v", seen, err)
			}
			b.ReportAllocs()
			var lat []time.Duration
			for b.Loop() {
				start := time.Now()
				if _, err := h.SessionSeen(ctx, scope, "file.read", `(^|/)\.env$`); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			reportLatency(b, lat)
		})
	}
}

// BenchmarkCounter reads a counter's window (its slots in parallel, each
// from the stream's leader).
func BenchmarkCounter(b *testing.B) {
	bb := bustest.StartBus(b)
	ctx := testCtx(b)
	h := history.New(bb)
	key := policy.CounterKey{Policy: "rate", Counter: "shell", Key: "coder", Window: time.Hour}
	if err := h.Add(ctx, key, 1); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := h.Counter(ctx, key); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	reportLatency(b, lat)
}

// reportLatency reports the median and 99th percentile of one question.
func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}
