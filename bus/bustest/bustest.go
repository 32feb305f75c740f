// Package bustest is hookbus' one embedded-server test helper: a real
// in-process nats-server with JetStream, its store in t.TempDir(), shut down
// by t.Cleanup; a provisioned *bus.Bus over it; and Eventually, which polls
// a condition against a deadline (never sleep-and-hope), and Poll, the same
// wait for any goroutine.
//
//	func TestX(t *testing.T) {
//		b := bustest.StartBus(t)                 // server + connection + provisioned bus
//		...
//		bustest.Eventuallyf(t, 5*time.Second, func() bool { return got.Load() == 3 }, "3 events")
//	}
//
// Use Start when the test needs the server itself (a TCP URL, a restart, a
// second connection) and Provision to put a bus on a connection;
// StartCluster for a JetStream cluster (R3 streams, a leader to kill).
package bustest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/embedded"
	"github.com/nats-io/nats.go"
)

// Option configures Start.
type Option func(*embedded.Config)

// WithListener gives the server a TCP listener on 127.0.0.1 and a free port
// (Server.ClientURL returns its URL). Without it the server is reachable
// in-process only.
func WithListener() Option {
	return func(c *embedded.Config) { c.Listen = "127.0.0.1:-1" }
}

// WithStoreDir puts the store in dir instead of a new t.TempDir(), to
// restart a server on the data of an earlier one.
func WithStoreDir(dir string) Option {
	return func(c *embedded.Config) { c.StoreDir = dir }
}

// WithMaxPayload sets the server's max_payload.
func WithMaxPayload(n int32) Option {
	return func(c *embedded.Config) { c.MaxPayload = n }
}

// Start starts an embedded nats-server with JetStream (store in
// t.TempDir(), no TCP listener unless WithListener) and returns it with an
// in-process connection. Both are closed by t.Cleanup; the server's
// shutdown is waited for. Start fails the test when the server does not
// start.
func Start(t testing.TB, opts ...Option) (*embedded.Server, *nats.Conn) {
	t.Helper()
	cfg := embedded.Config{ServerName: "bustest"}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.StoreDir == "" {
		cfg.StoreDir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := embedded.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("bustest: start embedded server: %v", err)
	}
	t.Cleanup(srv.Shutdown)
	return srv, Conn(t, srv)
}

// Conn returns another in-process connection to srv, closed by t.Cleanup.
func Conn(t testing.TB, srv *embedded.Server, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := srv.Connect(opts...)
	if err != nil {
		t.Fatalf("bustest: connect: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Provision returns a bus over nc with its streams and buckets provisioned.
func Provision(t testing.TB, nc *nats.Conn, opts ...bus.Option) *bus.Bus {
	t.Helper()
	b, err := bus.New(nc, opts...)
	if err != nil {
		t.Fatalf("bustest: new bus: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Provision(ctx); err != nil {
		t.Fatalf("bustest: provision: %v", err)
	}
	return b
}

// StartBus starts an embedded server (as Start, without options) and
// returns a provisioned bus over an in-process connection to it.
func StartBus(t testing.TB, opts ...bus.Option) *bus.Bus {
	t.Helper()
	_, nc := Start(t)
	return Provision(t, nc, opts...)
}

// Eventually polls cond every 5ms until it returns true, and fails the test
// when timeout passes first.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool) {
	t.Helper()
	if !Poll(context.Background(), timeout, pollEvery, cond) {
		t.Fatalf("bustest: condition not met within %v", timeout)
	}
}

// Eventuallyf is Eventually with a description of what was awaited, for the
// failure message.
func Eventuallyf(t testing.TB, timeout time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	if !Poll(context.Background(), timeout, pollEvery, cond) {
		t.Fatalf("bustest: %s: not met within %v", fmt.Sprintf(format, args...), timeout)
	}
}

// pollEvery is how often Eventually asks.
const pollEvery = 5 * time.Millisecond

// Poll calls cond every interval until it returns true, and reports whether
// it did before timeout passed or ctx ended. It fails no test, so it may run
// on any goroutine (a handler that waits for a condition), or wait with an
// interval of its own for a condition that costs a request.
func Poll(ctx context.Context, timeout, interval time.Duration, cond func() bool) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}
