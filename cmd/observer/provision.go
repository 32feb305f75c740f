package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/internal/cli"
)

// cmdProvision creates or updates the streams and buckets, as an operator:
// with deploy/nats' permissions only the admin user may.
func cmdProvision(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("observer provision", flag.ContinueOnError)
	fs.SetOutput(stderr)
	conn := cli.ConnFlags{DefaultURL: "nats://" + cli.DefaultListen}
	conn.Register(fs)
	wait := fs.Duration("wait", 30*time.Second, "how long to wait for JetStream to be ready (a cluster electing its leader)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: observer provision [flags]\n\nCreates or updates hookbus' streams (HOOKBUS_EVENTS, HOOKBUS_RUNS, HOOKBUS_DLQ),\nKV buckets (hookbus_hooks, hookbus_trust, hookbus_decisions) and object store (hookbus_payloads).\nIdempotent. Use --replicas 3 on a 3-node cluster.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, err := conn.Open(ctx, "hookbus-provision", log, cli.ReadOnly)
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(*wait)
	for {
		pctx, cancel := context.WithTimeout(ctx, min(10*time.Second, *wait))
		err = c.Bus.Provision(pctx)
		cancel()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		// JetStream may not be ready yet (a cluster without a meta leader).
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	if err != nil {
		return err
	}
	n := bus.NamesFor(conn.Prefix)
	fmt.Fprintf(stdout, "provisioned %s, %s, %s, KV %s, %s and %s, object store %s (replicas %d)\n",
		n.Events, n.Runs, n.DeadLetters, n.Hooks, n.Trust, n.Decisions, n.Payloads, conn.Replicas)
	return nil
}
