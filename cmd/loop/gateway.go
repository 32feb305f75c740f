package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookbus/hookbus/internal/cli"
	"github.com/hookbus/hookbus/internal/health"
	"github.com/hookbus/hookbus/internal/httpauth"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// GatewayPath is where loop gateway takes Claude Code's http hooks
// (GatewayPath/AGENT for another agent than --agent).
const GatewayPath = "/claude-code"

// GatewayTokenEnv may hold a token loop gateway accepts (bound to no
// agent); Claude Code's http hooks send it from the same variable.
const GatewayTokenEnv = "HOOKBUS_GATEWAY_TOKEN"

const gatewayLong = `Takes Claude Code's http hooks on POST http://ADDR` + GatewayPath + ` (configure it for every
event, matcher "*"): each is recorded and decided as loop claude-hook does, on
one connection for a whole fleet. POST ` + GatewayPath + `/AGENT records under agent
AGENT instead of --agent.

Callers send Authorization: Bearer TOKEN when a token is configured
(--token-file, $` + GatewayTokenEnv + `); a token bound to agents writes only their
sessions. Without a token the gateway listens on loopback only. It serves
HTTPS with --http-tls-cert and --http-tls-key (--tls-cert and --tls-key are
the NATS connection's client certificate).

It needs a bus: --nats URL or --context NAME (or $NATS_URL, $NATS_CONTEXT).
With --metrics it serves /metrics, /healthz and /readyz; told to stop, it
answers the hooks in flight within --drain-timeout.`

// gatewayCmd is loop gateway: loop claude-hook as one long-lived HTTP
// server, for Claude Code's http hooks.
func gatewayCmd(a *cli.App) *cobra.Command {
	return cli.Command("gateway --listen ADDR [flags]", "Take Claude Code's http hooks (a long-lived gateway)", gatewayLong, func(fs *pflag.FlagSet) cli.Run {
		f := bridgeFlags{conn: cli.ConnFlags{App: a, NeedsBus: true}}
		f.register(fs)
		listen := fs.String("listen", "", "address to listen on for Claude Code's http hooks (host:port; required); off loopback give --token-file (or $"+GatewayTokenEnv+") and --public-url")
		auth := httpauth.Flags{TokenEnv: GatewayTokenEnv}
		auth.Register(fs)
		maxBody, maxTotal := byteSize(DefaultMaxBody), byteSize(DefaultMaxBodyTotal)
		fs.Var(&maxBody, "max-body", "the largest hook input taken (413 above it): bytes, or with KiB, MiB, GiB")
		fs.Var(&maxTotal, "max-body-total", "the most bytes of hook inputs held at once across requests (503 with Retry-After above it)")
		var admin cli.AdminFlags
		admin.Register(fs, "127.0.0.1:9467", 0, "take no new hook and answer those in flight (default: --timeout)")
		return func(ctx context.Context, args []string) error {
			return f.gateway(ctx, a, args, *listen, &auth, &admin, int64(maxBody), int64(maxTotal))
		}
	})
}

func (f *bridgeFlags) gateway(ctx context.Context, a *cli.App, args []string, listen string, auth *httpauth.Flags, admin *cli.AdminFlags, maxBody, maxTotal int64) error {
	stderr := a.Err
	if err := cli.NoArgs(nil, args); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	if err := admin.Check(); err != nil {
		return err
	}
	if listen == "" {
		return fmt.Errorf("%w: loop gateway needs --listen ADDR", cli.ErrUsage)
	}
	if maxBody > maxTotal {
		mb, mt := byteSize(maxBody), byteSize(maxTotal)
		return fmt.Errorf("%w: --max-body %s is over --max-body-total %s", cli.ErrUsage, &mb, &mt)
	}
	drain := admin.Drain
	if drain <= 0 {
		drain = f.timeout
	}
	log := a.Log.Logger(stderr)
	ln, err := auth.Listen(listen, httpauth.Options{Name: "loop gateway", Logger: log, ReadTimeout: time.Minute, ShutdownTimeout: drain, Drain: true})
	if err != nil {
		if errors.Is(err, httpauth.ErrInvalidConfig) {
			return fmt.Errorf("%w: %w", cli.ErrUsage, err)
		}
		return err
	}
	defer ln.Close()
	c, err := f.conn.Open(ctx, "hookbus-gateway", log, cli.ReadOnly)
	if err != nil {
		return err
	}
	defer c.Close()
	hooks, stop, err := syncHooks(ctx, c.Bus, log)
	if err != nil {
		return err
	}
	defer stop()
	gw, err := newGateway(f.config(c.Bus, hooks, log), maxBody, maxTotal)
	if err != nil {
		return err
	}
	h := health.New()
	c.HealthChecks(h)
	adm, err := admin.Serve("loop gateway", log, nil, h)
	if err != nil {
		return err
	}
	defer adm.Stop()
	a.Log.Say(stderr, "loop gateway: Claude Code http hooks on %s%s (%s)", ln.URL(), GatewayPath[1:], c.Where)
	if adm.URL != "" {
		a.Log.Say(stderr, "loop gateway: metrics on %smetrics, probes on %shealthz and %sreadyz", adm.URL, adm.URL, adm.URL)
	}
	served := make(chan error, 1)
	go func() { served <- ln.Serve(ctx, gw.handler()) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	h.Drain()
	a.Log.Say(stderr, "loop gateway: draining (at most %s)", drain)
	err = <-served
	a.Log.Say(stderr, "loop gateway: stopped")
	return err
}
