package budgets_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/budgets"
	"github.com/hookbus/hookbus/bus/embedded"
	"github.com/hookbus/hookbus/events"
)

// A budget of 1000 tokens a day: each model call is reserved, then
// charged; the call that would start with the budget used up is refused.
func Example() {
	b, cleanup := exampleBus()
	defer cleanup()
	ctx := context.Background()

	sb := budgets.New(b)
	if err := sb.SetLimit(ctx, budgets.Limit{Agent: "support", Period: 24 * time.Hour, Tokens: 1000}); err != nil {
		panic(err)
	}
	for _, run := range []string{"r1", "r2", "r3"} {
		exceeded, err := sb.Reserve(ctx, "support", "s1", run)
		if err != nil {
			panic(err)
		}
		if exceeded != "" {
			fmt.Println(run, "refused:", exceeded)
			continue
		}
		fmt.Println(run, "admitted")
		if err := sb.Charge(ctx, "support", "s1", run, events.Usage{InputTokens: 300, OutputTokens: 200}); err != nil {
			panic(err)
		}
	}
	// Output:
	// r1 admitted
	// r2 admitted
	// r3 refused: shared budget of agent support per 24h0m0s: tokens used 1000 of 1000
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
