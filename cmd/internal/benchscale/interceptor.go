package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// plugin is the interceptor's plugin id.
const plugin = "scale-guard"

// runInterceptor is "benchscale interceptor --nats URL": an allow on
// tool.before served with remote.Serve, until interrupted. It prints "ready"
// to stderr once it serves, and how many calls it answered when it stops.
func runInterceptor(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("benchscale interceptor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("nats", "", "NATS server URL")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if *url == "" {
		return fmt.Errorf("%w: interceptor needs --nats URL", errUsage)
	}
	nc, err := bus.Connect(*url)
	if err != nil {
		return err
	}
	defer nc.Close()
	var calls atomic.Int64
	svc, err := remote.Serve(ctx, nc, remote.ServeConfig{Plugin: plugin, Stages: []events.Stage{events.StageToolBefore}},
		interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			calls.Add(1)
			return nil, nil // allow
		}))
	if err != nil {
		return err
	}
	if err := nc.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(stderr, "interceptor: ready")
	<-ctx.Done()
	fmt.Fprintf(stderr, "interceptor: %d calls answered\n", calls.Load())
	return svc.Stop()
}
