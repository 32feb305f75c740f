package bustest

import (
	"context"
	"os"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/embedded"
)

// ExampleBus starts an embedded server on a temporary store and returns a
// provisioned bus and the function that stops it and removes the store:
// what the packages' Examples run on, where there is no testing.TB. It
// panics on an error.
func ExampleBus() (*bus.Bus, func()) {
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
