package budgets_test

import (
	"context"
	"fmt"
	"time"

	"github.com/hookbus/hookbus/bus/budgets"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
)

// A budget of 1000 tokens a day: each model call is reserved, then
// charged; the call that would start with the budget used up is refused.
func Example() {
	b, cleanup := bustest.ExampleBus()
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
