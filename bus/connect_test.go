package bus_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/embedded"
	"github.com/hookbus/hookbus/events"
)

func TestConnectOverTCP(t *testing.T) {
	srv, _ := bustest.Start(t, bustest.WithListener())
	nc, err := bus.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	b := bustest.Provision(t, nc)
	e := testEvent(t, "a", "s", "r", events.StageToolBefore, 1)
	publishAll(t, b, e)
	if got, _ := replayIDs(t, b, bus.Filter{}); !slices.Equal(got, []string{e.ID}) {
		t.Fatalf("replay over TCP = %v", got)
	}
}

func TestReplayOfflineStore(t *testing.T) {
	dir := t.TempDir()
	ctx := testCtx(t)
	srv, err := embedded.Start(ctx, embedded.Config{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	b := bustest.Provision(t, nc)
	var want []*events.Event
	for i := 0; i < 20; i++ {
		e := testEvent(t, "support", "s1", "r1", events.StageToolBefore, uint64(i))
		want = append(want, e)
		if err := b.Publish(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Flush(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	srv.Shutdown()

	off, err := embedded.OpenStore(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer off.Shutdown()
	if off.ClientURL() != "" {
		t.Errorf("offline store listens on %s", off.ClientURL())
	}
	onc, err := off.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer onc.Close()
	ob, err := bus.New(onc) // no Provision: read what is there
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	got, err := ob.SessionEvents(rctx, "support", "s1")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(got), ids(want)) {
		t.Fatalf("offline replay found %d events, want %d in order", len(got), len(want))
	}
}
