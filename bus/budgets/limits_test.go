package budgets_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/budgets"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
)

// A worker's Budgets follows the limits: a limit set or removed by another
// client applies once delivered, and the limits of agents with and
// without a budget are answered without a read of the server.
func TestLimitsFollowedWithoutReads(t *testing.T) {
	srv, nc := bustest.Start(t)
	admin := bustest.Provision(t, nc)
	worker, err := bus.New(bustest.Conn(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ab, wb := budgets.New(admin), budgets.New(worker)

	if _, ok, err := wb.Limit(ctx, "a"); err != nil || ok {
		t.Fatalf("Limit before any limit = %v, %v", ok, err)
	}
	if err := ab.SetLimit(ctx, budgets.Limit{Agent: "a", Period: time.Hour, Tokens: 1000}); err != nil {
		t.Fatal(err)
	}
	bustest.Eventuallyf(t, 5*time.Second, func() bool {
		l, ok, err := wb.Limit(ctx, "a")
		return err == nil && ok && l.Tokens == 1000
	}, "the worker never saw the limit set by the admin")

	var reads atomic.Int64
	spy := bustest.Conn(t, srv)
	for _, subj := range []string{"$JS.API.DIRECT.GET.>", "$JS.API.STREAM.MSG.GET.>"} {
		if _, err := spy.Subscribe(subj, func(*nats.Msg) { reads.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if l, ok, err := wb.Limit(ctx, "a"); err != nil || !ok || l.Tokens != 1000 {
			t.Fatalf("Limit(a) = %+v, %v, %v", l, ok, err)
		}
		if _, ok, err := wb.Limit(ctx, "nobody"); err != nil || ok {
			t.Fatalf("Limit(nobody) = %v, %v", ok, err)
		}
		if over, err := wb.Reserve(ctx, "nobody", "s", "r"); err != nil || over != "" {
			t.Fatalf("Reserve without a budget = %q, %v", over, err)
		}
	}
	// A request the spy sees after these proves it saw any before them.
	if err := worker.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := reads.Load(); n != 0 {
		t.Fatalf("%d reads of the server for limits the worker holds", n)
	}

	if err := ab.RemoveLimit(ctx, "a", events.Actor{}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := ab.Limit(ctx, "a"); err != nil || ok {
		t.Fatalf("the admin's own removal does not apply at once: %v, %v", ok, err)
	}
	bustest.Eventuallyf(t, 5*time.Second, func() bool {
		_, ok, err := wb.Limit(ctx, "a")
		return err == nil && !ok
	}, "the worker never saw the limit removed")
	// The admin's own change applies at once.
	if err := ab.SetLimit(ctx, budgets.Limit{Agent: "a", Period: time.Hour, Tokens: 7}); err != nil {
		t.Fatal(err)
	}
	if l, ok, err := ab.Limit(ctx, "a"); err != nil || !ok || l.Tokens != 7 {
		t.Fatalf("the admin's own SetLimit does not apply at once: %+v, %v, %v", l, ok, err)
	}
}
