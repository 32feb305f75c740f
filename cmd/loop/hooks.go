package main

import (
	"context"
	"log/slog"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/budgets"
	"github.com/hookbus/hookbus/bus/history"
	"github.com/hookbus/hookbus/bus/policies"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
)

// syncHooks returns the chain the loop runs hooks from, kept in step with
// the registry (remote interceptors registered with "observer hooks add",
// plugins turned off with "observer hooks disable"), the trust grants and
// the policies ("observer policy apply", evaluated in process), and a func
// that stops following them. Shadow registrations' decisions are recorded
// on the stream (remote.ShadowSink). opts narrow the policies loaded (a
// process deciding on one event loads those of its stage).
func syncHooks(ctx context.Context, b *bus.Bus, log *slog.Logger, opts ...policies.SyncOption) (*interceptors.Chain, func(), error) {
	trust, err := remote.WatchTrust(ctx, b)
	if err != nil {
		return nil, nil, err
	}
	chain := interceptors.NewChain(interceptors.WithTrust(trust), interceptors.WithLogger(log),
		interceptors.WithShadowSink(remote.ShadowSink(b, loop.DefaultSource)))
	hs, err := remote.SyncHooks(ctx, b, chain, trust)
	if err != nil {
		trust.Stop()
		return nil, nil, err
	}
	// The policies' history functions and counters read the record and the
	// counters stream, shared by every worker and the bridge.
	ps, err := policies.Sync(ctx, b, chain, history.New(b), opts...)
	if err != nil {
		hs.Stop()
		trust.Stop()
		return nil, nil, err
	}
	return chain, func() { ps.Stop(); hs.Stop(); trust.Stop() }, nil
}

// awaitHooks is syncHooks for a long-running process: it waits out an
// outage of the bus as cli.Conn.Await does.
func awaitHooks(ctx context.Context, c *cli.Conn, log *slog.Logger) (hooks *interceptors.Chain, stop func(), err error) {
	err = c.Await(ctx, "read the hooks", func(ctx context.Context) (err error) {
		hooks, stop, err = syncHooks(ctx, c.Bus, log)
		return err
	})
	return hooks, stop, err
}

// sharedBudget returns the fleet's shared budgets ("observer budgets set"),
// or nil, with a warning, on a bus provisioned without their bucket.
func sharedBudget(ctx context.Context, b *bus.Bus, log *slog.Logger) loop.SharedBudget {
	sb := budgets.New(b)
	if err := sb.Check(ctx); err != nil {
		log.Warn("shared budgets off: their bucket cannot be opened (provision the bus again)", "err", err)
		return nil
	}
	return sb
}
