package runs_test

import (
	"context"
	"fmt"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
)

// A run request queued twice runs once, on a worker serving its agent.
func ExampleQueue_Submit() {
	b, cleanup := bustest.ExampleBus()
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
	w, err := q.Consume(ctx, runs.ConsumerConfig{Agents: runs.Agents("support"), Concurrency: 4}, func(_ context.Context, r *events.RunRequest) (runs.Outcome, error) {
		done <- r.RunID
		return runs.Outcome{}, nil
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
