package runs_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
)

// A run request over the payload limit travels as a stub naming an object
// that holds it; the worker gets the whole request. A stub naming an
// object outside the run objects is malformed, never fetched.
func TestLargeRunRequestIsClaimChecked(t *testing.T) {
	_, nc := bustest.Start(t)
	b := bustest.Provision(t, nc, bus.WithMaxPayload(8<<10))
	ctx := testCtx(t)
	req := runReq("support", "big")
	req.Prompt = strings.Repeat("lorem ipsum ", 2000) // 24 KB
	if err := runs.New(b).Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := b.JetStream().PublishMsg(ctx, &nats.Msg{Subject: "hookbus.run.support",
		Header: nats.Header{runs.RefHeader: {"hookbus_payloads/evt/somebody-elses/object"}}}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []*events.RunRequest
	rc, err := runs.New(b).Consume(ctx, fastRuns(runs.ConsumerConfig{Agents: runs.Agents("support")}), func(_ context.Context, r *events.RunRequest) (runs.Outcome, error) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r)
		return runs.Outcome{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Stop()
	bustest.Eventuallyf(t, 10*time.Second, func() bool { st := rc.Stats(); return st.Completed == 1 && st.Malformed == 1 }, "the large run and the bad stub handled")
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0].RunID != req.RunID || got[0].Prompt != req.Prompt {
		t.Fatalf("the worker got %d requests (prompt %d bytes), want the whole request", len(got), len(got[0].Prompt))
	}
}
