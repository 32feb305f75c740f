package history_test

import (
	"fmt"
	"testing"

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
			b.ResetTimer()
			for b.Loop() {
				if _, err := h.SessionSeen(ctx, scope, "file.read", `(^|/)\.env$`); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCounter reads a counter's window (its slots in parallel, each
// from the stream's leader).
func BenchmarkCounter(b *testing.B) {
	bb := bustest.StartBus(b)
	ctx := testCtx(b)
	h := history.New(bb)
	key := policy.CounterKey{Policy: "rate", Counter: "shell", Key: "coder", Window: 3600e9}
	if err := h.Add(ctx, key, 1); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Counter(ctx, key); err != nil {
			b.Fatal(err)
		}
	}
}
