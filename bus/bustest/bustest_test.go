package bustest_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
)

func TestStartInProcessHasJetStream(t *testing.T) {
	srv, nc := bustest.Start(t)
	if srv.ClientURL() != "" {
		t.Fatalf("ClientURL = %q, want none without WithListener", srv.ClientURL())
	}
	if !nc.IsConnected() {
		t.Fatal("connection not connected")
	}
	if !srv.NATSServer().JetStreamEnabled() {
		t.Fatal("JetStream not enabled")
	}
}

func TestStartWithListener(t *testing.T) {
	srv, _ := bustest.Start(t, bustest.WithListener())
	if !strings.HasPrefix(srv.ClientURL(), "nats://127.0.0.1:") || strings.HasSuffix(srv.ClientURL(), ":-1") {
		t.Fatalf("ClientURL = %q, want nats://127.0.0.1:<port>", srv.ClientURL())
	}
}

func TestStartBusProvisions(t *testing.T) {
	b := bustest.StartBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, name := range []string{b.Names().Events, b.Names().Runs, b.Names().DeadLetters} {
		if _, err := b.JetStream().Stream(ctx, name); err != nil {
			t.Errorf("stream %s: %v", name, err)
		}
	}
}

func TestEventuallyPolls(t *testing.T) {
	var n atomic.Int32
	go func() {
		for i := 0; i < 3; i++ {
			n.Add(1)
		}
	}()
	bustest.Eventually(t, 5*time.Second, func() bool { return n.Load() >= 1 })
	bustest.Eventuallyf(t, 5*time.Second, func() bool { return n.Load() == 3 }, "n == %d", 3)
}

// Poll reports false, failing nothing, when its timeout passes or its ctx
// ends before the condition holds.
func TestPollGivesUp(t *testing.T) {
	never := func() bool { return false }
	if bustest.Poll(context.Background(), 20*time.Millisecond, time.Millisecond, never) {
		t.Fatal("Poll of a condition that never holds reported true")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if bustest.Poll(ctx, time.Hour, time.Millisecond, never) {
		t.Fatal("Poll with an ended ctx reported true")
	}
	calls := 0
	if !bustest.Poll(ctx, time.Hour, time.Hour, func() bool { calls++; return true }) || calls != 1 {
		t.Fatalf("Poll of a condition that holds: %d calls", calls)
	}
}
