package history_test

import (
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/history"
	"github.com/hookbus/hookbus/policy"
	"github.com/nats-io/nats.go"
)

// Workers connected to different nodes of a 3-node cluster (every stream
// R3) answer alike, at once: each read is the streams' leader's, never a
// replica's that may be behind it.
func TestClusterWorkersAnswerAlike(t *testing.T) {
	c := bustest.StartCluster(t, 3)
	ctx := testCtx(t)
	var hs []*history.History
	var writer *bus.Bus
	for _, s := range c.Servers {
		nc, err := bus.Connect(c.URLs(s.Name()), nats.DontRandomize())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		if nc.ConnectedServerName() != s.Name() {
			t.Fatalf("connected to %s, want %s", nc.ConnectedServerName(), s.Name())
		}
		b := bustest.Provision(t, nc, bus.WithReplicas(3))
		if writer == nil {
			writer = b
		}
		hs = append(hs, history.New(b, history.WithClock(func() time.Time { return t0 })))
	}
	key := policy.CounterKey{Policy: "rate", Counter: "shell_per_agent", Key: "coder", Window: time.Hour}
	scope := policy.Scope{Agent: "coder", Session: "s1"}
	r := newRecorder(writer, "coder", "s1", t0)
	for round := 1; round <= 3; round++ {
		r.call(t, "r1", shell("ls"))
		var wg sync.WaitGroup
		for _, h := range hs {
			wg.Go(func() {
				for range 5 {
					if err := h.Add(ctx, key, 1); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		for i, h := range hs {
			if v, err := h.Counter(ctx, key); err != nil || v != float64(15*round) {
				t.Errorf("round %d, node %d: counter = %v, %v; want %d", round, i+1, v, err, 15*round)
			}
			if n, err := h.SessionCount(ctx, scope, "shell", all); err != nil || n != int64(round) {
				t.Errorf("round %d, node %d: session count = %d, %v; want %d", round, i+1, n, err, round)
			}
		}
	}
}
