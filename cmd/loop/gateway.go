package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/cmd/internal/health"
	"github.com/hookbus/hookbus/hooks/harness"
	"github.com/hookbus/hookbus/internal/httpauth"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// GatewayPath is where loop gateway takes Claude Code's http hooks
// (GatewayPath/AGENT for another agent than --agent). Each harness has its
// route, its default agent id: /claude-code, /gemini-cli, /codex-cli.
const GatewayPath = "/claude-code"

// GatewayTokenEnv may hold a token loop gateway accepts (bound to no
// agent); Claude Code's http hooks send it from the same variable.
const GatewayTokenEnv = "HOOKBUS_GATEWAY_TOKEN"

const gatewayLong = `Takes coding agents' hooks over http, each harness on its route: Claude
Code's http hooks on POST http://ADDR` + GatewayPath + ` (configure it for every
event, matcher "*"), Gemini CLI's on /gemini-cli and Codex CLI's on
/codex-cli (from a command hook that posts its stdin), OpenCode's and Kilo
Code's on /opencode and /kilo-code (from hookbus' plugin,
docs/OPENCODE.md). Each is recorded and
decided as loop agent-hook does, on one connection for a whole fleet. POST
/ROUTE/AGENT records under agent AGENT instead of --agent (or the harness's
own agent id).

Callers send Authorization: Bearer TOKEN when a token is configured
(--token-file, $` + GatewayTokenEnv + `); a token bound to agents writes only their
sessions. Without a token the gateway listens on loopback only. It serves
HTTPS with --http-tls-cert and --http-tls-key (--tls-cert and --tls-key are
the NATS connection's client certificate).

It needs a bus: --nats URL or --context NAME (or $NATS_URL, $NATS_CONTEXT).
With --metrics it serves /metrics, /healthz and /readyz; told to stop, it
answers the hooks in flight within --drain-timeout.`

// gatewayCmd is loop gateway: loop agent-hook as one long-lived HTTP
// server, for Claude Code's http hooks and the other harnesses' hooks
// posted to it.
func gatewayCmd(a *cli.App) *cobra.Command {
	return cli.Command("gateway --listen ADDR [flags]", "Take coding agents' hooks over http, a route per harness (a long-lived gateway)", gatewayLong, func(fs *pflag.FlagSet) cli.Run {
		f := bridgeFlags{conn: cli.ConnFlags{App: a, NeedsBus: true, Await: true}}
		f.register(fs)
		names := fs.String("harness", strings.Join(harnessNames, ","), "the coding agents to take hooks of, comma-separated: each on its route (claude: POST /claude-code, gemini: /gemini-cli, codex: /codex-cli, opencode: /opencode, kilo: /kilo-code)")
		listen := fs.String("listen", "", "address to listen on for hooks (host:port; required); off loopback give --token-file (or $"+GatewayTokenEnv+") and --public-url")
		auth := httpauth.Flags{TokenEnv: GatewayTokenEnv}
		auth.Register(fs)
		maxBody, maxTotal, perCaller, minRate := byteSize(DefaultMaxBody), byteSize(DefaultMaxBodyTotal), byteSize(DefaultMaxBodyPerCaller), byteSize(DefaultMinBodyRate)
		fs.Var(&maxBody, "max-body", "the largest hook input taken (413 above it): bytes, or with KiB, MiB, GiB")
		fs.Var(&maxTotal, "max-body-total", "the most bytes of hook inputs held at once across requests, counted as they arrive (503 with Retry-After above it)")
		fs.Var(&perCaller, "max-body-per-caller", "the most bytes of hook inputs one caller (a token; on loopback without tokens, the local user) holds at once (503 with Retry-After above it); default half of --max-body-total, at least --max-body")
		readTimeout := fs.Duration("read-timeout", DefaultReadTimeout, "how long a request's headers, and its body's first bytes, may take (the connection is closed, or 408)")
		fs.Var(&minRate, "min-body-rate", "after --read-timeout, the slowest a hook input may come, per second (408 below it)")
		var admin cli.AdminFlags
		admin.Register(fs, "127.0.0.1:9467", 0, "take no new hook and answer those in flight (default: --timeout)")
		var idle closeIdleFlags
		idle.register(fs, 0, " (loop close-idle)")
		return func(ctx context.Context, args []string) error {
			if err := idle.check(); err != nil {
				return err
			}
			limits := bodyLimits{max: int64(maxBody), total: int64(maxTotal), perCaller: int64(perCaller), timeout: *readTimeout, minRate: int64(minRate)}
			if !fs.Changed("max-body-per-caller") {
				limits.perCaller = min(max(limits.total/2, limits.max), limits.total)
			}
			return f.gateway(ctx, a, args, *names, *listen, &auth, &admin, limits, &idle)
		}
	})
}

func (f *bridgeFlags) gateway(ctx context.Context, a *cli.App, args []string, names, listen string, auth *httpauth.Flags, admin *cli.AdminFlags, limits bodyLimits, idle *closeIdleFlags) error {
	stderr := a.Err
	if err := cli.NoArgs(nil, args); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	var hs []harness.Protocol
	for _, n := range strings.Split(names, ",") {
		h, err := harnessOf(strings.TrimSpace(n), f.approve)
		if err != nil {
			return err
		}
		hs = append(hs, h)
	}
	if err := admin.Check(); err != nil {
		return err
	}
	if listen == "" {
		return fmt.Errorf("%w: loop gateway needs --listen ADDR", cli.ErrUsage)
	}
	if err := limits.check(); err != nil {
		return fmt.Errorf("%w: %w", cli.ErrUsage, err)
	}
	drain := admin.Drain
	if drain <= 0 {
		drain = f.timeout
	}
	log := a.Log.Logger(stderr)
	ln, err := auth.Listen(listen, httpauth.Options{Name: "loop gateway", Logger: log,
		ReadHeaderTimeout: limits.timeout, ReadTimeout: limits.slowest(), ShutdownTimeout: drain, Drain: true})
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
	hooks, stop, err := awaitHooks(ctx, c, log)
	if err != nil {
		return err
	}
	defer stop()
	gw, err := newGateway(f.config(c.Bus, hooks, log), limits, hs...)
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
	idle.start(ctx, c, log)
	var routes []string
	for _, r := range gw.routes {
		routes = append(routes, ln.URL()+r.path[1:])
	}
	a.Log.Say(stderr, "loop gateway: hooks on %s (%s)", strings.Join(routes, ", "), c.Where)
	adm.Say(&a.Log, stderr)
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
