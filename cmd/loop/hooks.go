package main

import (
	"context"
	"log/slog"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/interceptors"
)

// syncHooks returns the chain the loop runs hooks from, kept in step with
// the registry (remote interceptors registered with "observer hooks add")
// and the trust grants, and a func that stops following them.
func syncHooks(ctx context.Context, b *bus.Bus, log *slog.Logger) (*interceptors.Chain, func(), error) {
	trust, err := b.WatchTrust(ctx)
	if err != nil {
		return nil, nil, err
	}
	chain := interceptors.NewChain(interceptors.WithTrust(trust), interceptors.WithLogger(log))
	hs, err := b.SyncHooks(ctx, chain, trust)
	if err != nil {
		trust.Stop()
		return nil, nil, err
	}
	return chain, func() { hs.Stop(); trust.Stop() }, nil
}
