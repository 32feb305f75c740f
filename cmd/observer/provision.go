package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// provisionCmd creates or updates the streams and buckets, as an operator:
// with deploy/nats' permissions only the admin user may.
func provisionCmd(a *cli.App) *cobra.Command {
	return cli.NoArgsCommand("provision [flags]", "Create or update the streams and buckets (an operator)", `Creates or updates hookbus' streams (HOOKBUS_EVENTS, HOOKBUS_RUNS, HOOKBUS_WAKES, HOOKBUS_DLQ, HOOKBUS_CHECKPOINTS),
KV buckets (hookbus_hooks, hookbus_trust, hookbus_decisions) and object store (hookbus_payloads).
Idempotent. Use --replicas 3 on a 3-node cluster, --max-age to bound retention.`, func(fs *pflag.FlagSet) cli.Run {
		stdout, stderr := a.Out, a.Err
		conn := cli.ConnFlags{App: a, StoreFallback: true}
		conn.Register(fs)
		wait := fs.Duration("wait", 30*time.Second, "how long to wait for JetStream to be ready (a cluster electing its leader)")
		maxAge := fs.Duration("max-age", 0, "retention: how long the events stream keeps an event, and the payloads store its data (e.g. 720h; 0: forever); default: keep the current setting (forever on a new bus)")
		var out cli.Output
		out.Register(fs, `{"assets": [{"kind", "name", "replicas", "max_age"}, ...]}, indented`, cli.OutputText, cli.OutputTable, cli.OutputJSON)
		return func(ctx context.Context, _ []string) error {
			if *wait <= 0 {
				return fmt.Errorf("%w: --wait %s: give a positive duration", cli.ErrUsage, *wait)
			}
			if *maxAge < 0 {
				return fmt.Errorf("%w: --max-age %s is negative (0 keeps events forever)", cli.ErrUsage, *maxAge)
			}
			setAge := cli.Set(fs)["max-age"]
			log := a.Log.Logger(stderr)
			c, gctx, release, err := conn.OpenGuarded(ctx, "hookbus-provision", log, cli.ReadOnly)
			if err != nil {
				return err
			}
			defer release()
			names := bus.NamesFor(conn.Prefix)
			deadline := time.Now().Add(*wait)
			for {
				pctx, cancel := context.WithTimeout(gctx, min(10*time.Second, *wait))
				err = provision(pctx, c, conn, log, maxAge, setAge)
				cancel()
				if err == nil || time.Now().After(deadline) || gctx.Err() != nil {
					break
				}
				// JetStream may not be ready yet (a cluster without a meta leader).
				select {
				case <-gctx.Done():
				case <-time.After(time.Second):
				}
			}
			if err != nil {
				return c.Explain(err)
			}
			if out.Format != cli.OutputText {
				assets, err := provisioned(gctx, c, names)
				if err != nil {
					return c.Explain(err)
				}
				return printProvisioned(stdout, assets, out.JSON())
			}
			age := "kept forever"
			if *maxAge > 0 {
				age = "kept " + maxAge.String()
			}
			fmt.Fprintf(stdout, "provisioned %s, %s, %s, %s, %s, KV %s, %s, %s and %s, object store %s (replicas %d; events %s)\n",
				names.Events, names.Runs, names.Wakes, names.DeadLetters, names.Checkpoints, names.Hooks, names.Trust, names.Decisions, names.Budgets, names.Payloads, conn.Replicas, age)
			return nil
		}
	})
}

// provision provisions the bus with maxAge; when it was not given, with the
// events stream's current max age, which it stores in maxAge.
func provision(ctx context.Context, c *cli.Conn, conn cli.ConnFlags, log *slog.Logger, maxAge *time.Duration, given bool) error {
	if !given {
		// Keep the retention an operator set before: provisioning again
		// (another replica count, a newer hookbus) must not drop it.
		age, err := currentMaxAge(ctx, c, bus.NamesFor(conn.Prefix).Events)
		if err != nil {
			return err
		}
		*maxAge = age
	}
	b, err := bus.New(c.NC, bus.WithPrefix(conn.Prefix), bus.WithLogger(log), bus.WithReplicas(conn.Replicas), bus.WithEventsMaxAge(*maxAge))
	if err != nil {
		return err
	}
	return b.Provision(ctx)
}

// currentMaxAge is the events stream's max age, 0 when it does not exist
// yet.
func currentMaxAge(ctx context.Context, c *cli.Conn, stream string) (time.Duration, error) {
	js, err := jetstream.New(c.NC)
	if err != nil {
		return 0, err
	}
	s, err := js.Stream(ctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading the retention of %s: %w", stream, err)
	}
	return s.CachedInfo().Config.MaxAge, nil
}
