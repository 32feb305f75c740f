package embedded_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/embedded"
)

func TestStartBusyPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	addr := l.Addr().String()
	_, err = embedded.Start(testCtx(t), embedded.Config{StoreDir: t.TempDir(), Listen: addr})
	if !errors.Is(err, embedded.ErrAddrInUse) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("err = %v, want ErrAddrInUse naming %s", err, addr)
	}
}

func TestStartLockedStore(t *testing.T) {
	dir := t.TempDir()
	srv, _ := bustest.Start(t, bustest.WithStoreDir(dir))
	_, err := embedded.Start(testCtx(t), embedded.Config{StoreDir: dir})
	if !errors.Is(err, embedded.ErrStoreLocked) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second server on %s: %v, want ErrStoreLocked naming the dir", dir, err)
	}
	if _, err := embedded.OpenStore(testCtx(t), dir); !errors.Is(err, embedded.ErrStoreLocked) {
		t.Fatalf("OpenStore of a running server's dir: %v, want ErrStoreLocked", err)
	}
	srv.Shutdown()
	// Released on shutdown.
	again, err := embedded.Start(testCtx(t), embedded.Config{StoreDir: dir})
	if err != nil {
		t.Fatalf("restart after shutdown: %v", err)
	}
	again.Shutdown()
}

func TestStartValidates(t *testing.T) {
	ctx := testCtx(t)
	if _, err := embedded.Start(ctx, embedded.Config{}); !errors.Is(err, embedded.ErrInvalidConfig) {
		t.Errorf("no store dir: %v", err)
	}
	if _, err := embedded.Start(ctx, embedded.Config{StoreDir: t.TempDir(), Listen: "localhost"}); !errors.Is(err, embedded.ErrInvalidConfig) {
		t.Errorf("listen without port: %v", err)
	}
	if _, err := embedded.OpenStore(ctx, t.TempDir()); !errors.Is(err, embedded.ErrNoStore) {
		t.Errorf("OpenStore of an empty dir: %v, want ErrNoStore", err)
	}
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
