package bus_test

import (
	"context"
	"fmt"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
)

func ExampleBus_Publish() {
	b, cleanup := bustest.ExampleBus()
	defer cleanup()
	ctx := context.Background()

	for i, stage := range []events.Stage{events.StageRunStarted, events.StageStepStarted, events.StageRunCompleted} {
		e, err := events.New(stage, events.Meta{
			Source: "hookbus/example", AgentID: "support", SessionID: "s1", RunID: "r1", Seq: uint64(i),
		}, struct{}{})
		if err != nil {
			panic(err)
		}
		if err := b.Publish(ctx, e); err != nil { // asynchronous
			panic(err)
		}
	}
	if err := b.Flush(ctx, "r1"); err != nil { // every publish of r1 is stored
		panic(err)
	}
	evs, err := b.SessionEvents(ctx, "support", "s1")
	if err != nil {
		panic(err)
	}
	for _, e := range evs {
		fmt.Println(e.Seq, e.Stage)
	}
	// Output:
	// 0 run.started
	// 1 step.started
	// 2 run.completed
}

func ExampleBus_Replay() {
	b, cleanup := bustest.ExampleBus()
	defer cleanup()
	ctx := context.Background()

	call := events.ToolBefore{Call: events.ToolCall{ID: "c1", Name: "search"}}
	for _, run := range []string{"r1", "r2"} {
		e, _ := events.New(events.StageToolBefore, events.Meta{
			Source: "hookbus/example", AgentID: "support", SessionID: "s1", RunID: run,
		}, call)
		if err := b.PublishSync(ctx, e); err != nil { // write-ahead
			panic(err)
		}
	}
	st, err := b.Replay(ctx, bus.Filter{Agent: "support", Run: "r2", Stages: []events.Stage{events.StageToolBefore}},
		func(e *events.Event) error {
			p, err := events.Data[events.ToolBefore](e)
			if err != nil {
				return err
			}
			fmt.Println(e.RunID, e.Stage, p.Call.Name)
			return nil
		})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d event, %d filtered out\n", st.Events, st.Filtered)
	// Output:
	// r2 tool.before search
	// 1 event, 1 filtered out
}

func ExampleBus_Observe() {
	b, cleanup := bustest.ExampleBus()
	defer cleanup()
	ctx := context.Background()

	done := make(chan string, 1)
	o, err := b.Observe(ctx, bus.ObserveConfig{Durable: "billing", Stages: []events.Stage{events.StageRunCompleted}},
		func(_ context.Context, e *events.Event) error {
			done <- e.RunID
			return nil // acknowledged
		})
	if err != nil {
		panic(err)
	}
	defer o.Stop()
	e, _ := events.New(events.StageRunCompleted, events.Meta{
		Source: "hookbus/example", AgentID: "support", SessionID: "s1", RunID: "r1",
	}, events.RunCompleted{Reason: events.ReasonDone})
	if err := b.PublishSync(ctx, e); err != nil {
		panic(err)
	}
	select {
	case run := <-done:
		fmt.Println("billed", run)
	case <-time.After(10 * time.Second):
		fmt.Println("timeout")
	}
	// Output: billed r1
}
