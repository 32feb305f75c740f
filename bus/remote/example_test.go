package remote_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// A remote interceptor: a service that denies shell commands, served with
// Serve, called from a chain through a Client.
func ExampleServe() {
	b, cleanup := bustest.ExampleBus()
	defer cleanup()
	ctx := context.Background()

	// The plugin's side: any process with a NATS connection (bus.Connect).
	svc, err := remote.Serve(ctx, b.Conn(), remote.ServeConfig{
		Plugin: "guard", Stages: []events.Stage{events.StageToolBefore}, Description: "no shell",
	}, interceptors.Func(func(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
		p, err := events.Data[events.ToolBefore](req.Event)
		if err != nil {
			return nil, err
		}
		if p.Call.Name == "bash" {
			return &interceptors.Decision{Kind: interceptors.Deny, Reason: "no shell commands"}, nil
		}
		return nil, nil // allow
	}))
	if err != nil {
		panic(err)
	}
	defer svc.Stop()

	// The loop's side: a chain with the remote interceptor registered.
	chain := interceptors.NewChain()
	if _, err := remote.Register(b, chain, interceptors.Registration{Plugin: "guard", Stage: events.StageToolBefore}); err != nil {
		panic(err)
	}
	for _, tool := range []string{"calculator", "bash"} {
		ev, err := events.New(events.StageToolBefore, events.Meta{
			Source: "hookbus/example", AgentID: "support", SessionID: "s1", RunID: "r1", Subject: tool,
		}, events.ToolBefore{Call: events.ToolCall{ID: "call_1", Name: tool, Arguments: json.RawMessage(`{}`)}})
		if err != nil {
			panic(err)
		}
		out, err := chain.Run(ctx, ev)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %s %q (remote %v)\n", tool, out.Decision, out.Reason, out.Records[0].Remote)
	}
	// Output:
	// calculator: allow "" (remote true)
	// bash: deny "no shell commands" (remote true)
}

// The registry says which remote interceptors the loop calls; SyncHooks
// keeps a chain in step with it.
func ExampleSyncHooks() {
	b, cleanup := bustest.ExampleBus()
	defer cleanup()
	ctx := context.Background()

	reg := remote.NewRegistry(b)
	if err := reg.Put(ctx, interceptors.Registration{Plugin: "pii", Stage: events.StageToolAfter, Order: 10}); err != nil {
		panic(err)
	}
	err := reg.Put(ctx, interceptors.Registration{Plugin: "rewriter", Stage: events.StageContextAssembled})
	fmt.Println(err)
	if err := reg.Grant(ctx, "rewriter"); err != nil {
		panic(err)
	}
	if err := reg.Put(ctx, interceptors.Registration{Plugin: "rewriter", Stage: events.StageContextAssembled}); err != nil {
		panic(err)
	}

	trust, err := remote.WatchTrust(ctx, b)
	if err != nil {
		panic(err)
	}
	defer trust.Stop()
	chain := interceptors.NewChain(interceptors.WithTrust(trust))
	hs, err := remote.SyncHooks(ctx, b, chain, trust)
	if err != nil {
		panic(err)
	}
	defer hs.Stop()
	fmt.Println(chain.Has(events.StageToolAfter, "fetch", "support"), chain.Has(events.StageContextAssembled, "", "support"))

	// Changes apply live; Synced waits until they have.
	if err := reg.Revoke(ctx, "rewriter"); err != nil {
		panic(err)
	}
	if err := hs.Synced(ctx); err != nil {
		panic(err)
	}
	fmt.Println(chain.Has(events.StageContextAssembled, "", "support"))
	// Output:
	// hookbus: privileged stage: plugin rewriter lacks privileged_hooks permission for stage context.assembled (grant it first)
	// true true
	// false
}
