package bus_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
)

func TestStartEmbeddedBusyPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	addr := l.Addr().String()
	_, err = bus.StartEmbedded(testCtx(t), bus.EmbeddedConfig{StoreDir: t.TempDir(), Listen: addr})
	if !errors.Is(err, bus.ErrAddrInUse) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("err = %v, want ErrAddrInUse naming %s", err, addr)
	}
}

func TestStartEmbeddedLockedStore(t *testing.T) {
	dir := t.TempDir()
	srv, _ := bustest.Start(t, bustest.WithStoreDir(dir))
	_, err := bus.StartEmbedded(testCtx(t), bus.EmbeddedConfig{StoreDir: dir})
	if !errors.Is(err, bus.ErrStoreLocked) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second server on %s: %v, want ErrStoreLocked naming the dir", dir, err)
	}
	if _, err := bus.OpenStore(testCtx(t), dir); !errors.Is(err, bus.ErrStoreLocked) {
		t.Fatalf("OpenStore of a running server's dir: %v, want ErrStoreLocked", err)
	}
	srv.Shutdown()
	// Released on shutdown.
	again, err := bus.StartEmbedded(testCtx(t), bus.EmbeddedConfig{StoreDir: dir})
	if err != nil {
		t.Fatalf("restart after shutdown: %v", err)
	}
	again.Shutdown()
}

func TestStartEmbeddedValidates(t *testing.T) {
	ctx := testCtx(t)
	if _, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{}); !errors.Is(err, bus.ErrInvalidOption) {
		t.Errorf("no store dir: %v", err)
	}
	if _, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{StoreDir: t.TempDir(), Listen: "localhost"}); !errors.Is(err, bus.ErrInvalidOption) {
		t.Errorf("listen without port: %v", err)
	}
	if _, err := bus.OpenStore(ctx, t.TempDir()); !errors.Is(err, bus.ErrNoStore) {
		t.Errorf("OpenStore of an empty dir: %v, want ErrNoStore", err)
	}
}

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
	srv, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{StoreDir: dir})
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

	off, err := bus.OpenStore(ctx, dir)
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
