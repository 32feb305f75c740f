package runs_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/nats-io/nats.go"
)

// A busy worker does not look at its definition's pinned queue, empty,
// once for every new run it takes; a pinned request is still taken while
// it is busy.
func TestABusyWorkerLooksAtAnEmptyPinnedQueueSeldom(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	const n = 200
	for i := range n {
		if err := runs.New(b).Submit(ctx, runReq("ops", fmt.Sprintf("r%03d", i))); err != nil {
			t.Fatal(err)
		}
	}
	digest := digestOf("d1")
	var pinned atomic.Int64
	sub, err := b.Conn().Subscribe("$JS.API.CONSUMER.MSG.NEXT.>", func(m *nats.Msg) {
		if strings.HasSuffix(m.Subject, "-"+digest) {
			pinned.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := b.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	var r recorder
	consume(t, b, runs.ConsumerConfig{Agents: []runs.ServedAgent{defined("ops", "d1", "")}, Concurrency: 4}, r.handle)
	bustest.Eventuallyf(t, 20*time.Second, func() bool { return len(r.runs()) == n }, "%d runs handled", n)
	if got := pinned.Load(); got >= n/2 {
		t.Fatalf("%d looks at the empty pinned queue for %d runs taken", got, n)
	}
	pin := runReq("ops", "pinned")
	pin.Definition = digest
	if err := runs.New(b).Submit(ctx, pin); err != nil {
		t.Fatal(err)
	}
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return len(r.runs()) == n+1 }, "the pinned request taken")
}
