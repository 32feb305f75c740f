package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hookbus/hookbus/hooks/harness"
	"github.com/hookbus/hookbus/internal/cli"
	"github.com/hookbus/hookbus/internal/httpauth"
)

// GatewayPath is where loop gateway takes Claude Code's http hooks
// (GatewayPath/AGENT for another agent than --agent). Each harness has its
// route, its default agent id: /claude-code, /gemini-cli, /codex-cli.
const GatewayPath = "/claude-code"

// GatewayTokenEnv may hold a token loop gateway accepts (bound to no
// agent); Claude Code's http hooks send it from the same variable.
const GatewayTokenEnv = "HOOKBUS_GATEWAY_TOKEN"

// cmdGateway is loop gateway: loop agent-hook as one long-lived HTTP
// server, for Claude Code's http hooks and the other harnesses' hooks
// posted to it.
func cmdGateway(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := newFlagSet("gateway", stderr)
	var f bridgeFlags
	f.register(fs)
	names := fs.String("harness", strings.Join(harnessNames, ","), "the coding agents to take hooks of, comma-separated: each on its route (claude: POST /claude-code, gemini: /gemini-cli, codex: /codex-cli)")
	listen := fs.String("listen", "", "address to listen on for hooks (host:port; required); off loopback give --token-file (or $"+GatewayTokenEnv+") and --public-url")
	auth := httpauth.Flags{TokenEnv: GatewayTokenEnv}
	auth.Register(fs)
	maxBody, maxTotal := byteSize(DefaultMaxBody), byteSize(DefaultMaxBodyTotal)
	fs.Var(&maxBody, "max-body", "the largest hook input taken (413 above it): bytes, or with KiB, MiB, GiB")
	fs.Var(&maxTotal, "max-body-total", "the most bytes of hook inputs held at once across requests (503 with Retry-After above it)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `Usage: loop gateway --listen ADDR [flags]

Takes coding agents' hooks over http, each harness on its route: Claude
Code's http hooks on POST http://ADDR`+GatewayPath+` (configure it for every
event, matcher "*"), Gemini CLI's on /gemini-cli and Codex CLI's on
/codex-cli (from a command hook that posts its stdin). Each is recorded and
decided as loop agent-hook does, on one connection for a whole fleet. POST
/ROUTE/AGENT records under agent AGENT instead of --agent (or the harness's
own agent id).

Callers send Authorization: Bearer TOKEN when a token is configured
(--token-file, $`+GatewayTokenEnv+`); a token bound to agents writes only their
sessions. Without a token the gateway listens on loopback only.

Flags:`)
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	if err := f.check(fs); err != nil {
		return err
	}
	var hs []harness.Protocol
	for _, n := range strings.Split(*names, ",") {
		h, err := harnessOf(strings.TrimSpace(n), f.approve)
		if err != nil {
			return err
		}
		hs = append(hs, h)
	}
	if *listen == "" {
		return fmt.Errorf("%w: loop gateway needs --listen ADDR", cli.ErrUsage)
	}
	if maxBody > maxTotal {
		return fmt.Errorf("%w: --max-body %s is over --max-body-total %s", cli.ErrUsage, &maxBody, &maxTotal)
	}
	log := cli.Logger(f.verbose, stderr)
	ln, err := auth.Listen(*listen, httpauth.Options{Name: "loop gateway", Logger: log, ReadTimeout: time.Minute, ShutdownTimeout: f.timeout, Drain: true})
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
	gw, err := newGateway(f.config(c.Bus, hooks, log), int64(maxBody), int64(maxTotal), hs...)
	if err != nil {
		return err
	}
	var routes []string
	for _, r := range gw.routes {
		routes = append(routes, ln.URL()+r.path[1:])
	}
	fmt.Fprintf(stderr, "loop gateway: hooks on %s (%s)\n", strings.Join(routes, ", "), c.Where)
	return ln.Serve(ctx, gw.handler())
}
