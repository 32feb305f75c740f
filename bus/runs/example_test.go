package runs_test

import (
	"context"
	"fmt"
	"os"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/embedded"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
)

// A run request queued twice runs once, on a worker serving its agent.
func ExampleQueue_Submit() {
	b, cleanup := exampleBus()
	defer cleanup()
	ctx := context.Background()
	q := runs.New(b) // no I/O: b's Provision made the streams and buckets

	req := &events.RunRequest{RunID: "r1", AgentID: "support", SessionID: "s1", Prompt: "hello"}
	for i := 0; i < 2; i++ { // a retried submission is queued once
		if err := q.Submit(ctx, req); err != nil {
			panic(err)
		}
	}
	done := make(chan string, 2)
	w, err := q.Consume(ctx, runs.ConsumerConfig{Agents: runs.Agents("support"), Concurrency: 4}, func(_ context.Context, r *events.RunRequest) error {
		done <- r.RunID
		return nil
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("ran", <-done)
	w.Drain()
	<-w.Closed()
	fmt.Println("also ran:", len(done))
	// Output:
	// ran r1
	// also ran: 0
}

// exampleBus starts an embedded server on a temporary store and returns a
// provisioned bus and a cleanup function.
func exampleBus() (*bus.Bus, func()) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "hookbus-example")
	if err != nil {
		panic(err)
	}
	srv, err := embedded.Start(ctx, embedded.Config{StoreDir: dir})
	if err != nil {
		panic(err)
	}
	nc, err := srv.Connect()
	if err != nil {
		panic(err)
	}
	b, err := bus.New(nc)
	if err != nil {
		panic(err)
	}
	if err := b.Provision(ctx); err != nil {
		panic(err)
	}
	return b, func() {
		nc.Close()
		srv.Shutdown()
		os.RemoveAll(dir)
	}
}
