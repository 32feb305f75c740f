package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/cmd/internal/health"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

const serverLong = `Runs the embedded NATS server (JetStream, its store in --store) with hookbus' streams
and buckets, listening for other processes until interrupted: runs (loop run --nats URL,
loop submit), workers (loop serve --nats URL), interceptors and observers attach to it.
It has no authentication: a single-user development server. With --metrics it serves
/healthz and /readyz (the server answers and its streams are reachable).`

// serverCmd runs the embedded server alone, listening, until interrupted.
func serverCmd(a *cli.App) *cobra.Command {
	return cli.NoArgsCommand("server [flags]", "Run the embedded NATS server alone (a development bus)", serverLong, func(fs *pflag.FlagSet) cli.Run {
		conn := cli.ConnFlags{App: a, Embeds: true, EmbeddedOnly: true}
		conn.Register(fs)
		var admin cli.AdminFlags
		admin.Register(fs, "127.0.0.1:9466", 0, "")
		var idle closeIdleFlags
		idle.register(fs, time.Hour, "; loop close-idle does the same on any bus")
		return func(ctx context.Context, _ []string) error {
			stderr := a.Err
			if err := admin.Check(); err != nil {
				return err
			}
			if err := idle.check(); err != nil {
				return err
			}
			if conn.Listen == "none" || conn.Listen == "" {
				return fmt.Errorf("%w: loop server is for other processes: give it an address to --listen on", cli.ErrUsage)
			}
			log := a.Log.Logger(stderr)
			c, err := conn.Open(ctx, "hookbus-server", log, cli.Provision)
			if err != nil {
				return err
			}
			defer c.Close()
			h := health.New()
			h.Add("server", func(context.Context) error {
				if !c.Embedded.NATSServer().Running() {
					return errors.New("the embedded server is not running")
				}
				return nil
			})
			c.HealthChecks(h)
			adm, err := admin.Serve("loop server", log, nil, h)
			if err != nil {
				return err
			}
			defer adm.Stop()
			idle.start(ctx, c, log)
			url := c.Embedded.ClientURL()
			a.Log.Say(stderr, "loop server: listening on %s (store %s); attach with --nats %s; interrupt to stop", url, c.Embedded.StoreDir(), url)
			adm.Say(&a.Log, stderr)
			<-ctx.Done()
			h.Drain()
			a.Log.Say(stderr, "loop server: stopped")
			return nil
		}
	})
}
