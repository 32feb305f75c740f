// Command plugin is the smallest plugin: one interceptor served over NATS.
// bus' layering test lists what it links.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	nc, err := bus.Connect(os.Getenv("NATS_URL"))
	if err != nil {
		panic(err)
	}
	deny := interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		return &interceptors.Decision{Kind: interceptors.Deny, Reason: "no"}, nil
	})
	if _, err := remote.Serve(ctx, nc, remote.ServeConfig{Plugin: "guard", Stages: []events.Stage{events.StageToolBefore}}, deny); err != nil {
		panic(err)
	}
	<-ctx.Done()
}
