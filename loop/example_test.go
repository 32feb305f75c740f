package loop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/embedded"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/loop/tools"
)

// A run on an embedded server, with an in-process hook that denies the
// calculator: the model is told why, and the stream records every stage.
func ExampleEngine_Run() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "hookbus-example-")
	defer os.RemoveAll(dir)
	srv, err := embedded.Start(ctx, embedded.Config{StoreDir: dir})
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown()
	nc, _ := srv.Connect()
	defer nc.Close()
	b, _ := bus.New(nc)
	if err := b.Provision(ctx); err != nil {
		panic(err)
	}

	hooks := interceptors.NewChain()
	_, _ = hooks.Register(interceptors.Registration{Plugin: "policy", Stage: events.StageToolBefore, Tools: "calculator"},
		interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Deny, Reason: "no maths today"}, nil
		}))
	clock := loop.ToolFunc(events.ToolSpec{Name: "clock"}, func(context.Context, json.RawMessage) (string, error) { return "noon", nil })
	eng, err := loop.New(loop.Config{
		Emitter: b, History: b, Model: scripted.New(nil), Hooks: hooks,
		Tools: []loop.Tool{clock, tools.Calculator()},
	})
	if err != nil {
		panic(err)
	}
	res, err := eng.Run(ctx, &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "6*7?"})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Reason, res.Steps, res.Events)
	fmt.Println(res.Answer)
	// Output:
	// done 2 17
	// It is noon, and 6*7 = denied: policy: no maths today. (You asked: 6*7?)
}
