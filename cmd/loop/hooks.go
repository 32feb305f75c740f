package main

import (
	"context"
	"log/slog"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
)

// syncHooks returns the chain the loop runs hooks from, kept in step with
// the registry (remote interceptors registered with "observer hooks add").
func syncHooks(ctx context.Context, b *bus.Bus, log *slog.Logger) (loop.Interception, func(), error) {
	chain := interceptors.NewChain(interceptors.WithLogger(log))
	return chain, func() {}, nil
}
