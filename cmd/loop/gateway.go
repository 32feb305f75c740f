package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/hookbus/hookbus/interceptors/claudecode"
	"github.com/hookbus/hookbus/interceptors/claudecode/bridge"
	"github.com/hookbus/hookbus/internal/cli"
)

// GatewayPath is where loop gateway takes Claude Code's http hooks.
const GatewayPath = "/claude-code"

// cmdGateway is loop gateway: loop claude-hook as one long-lived HTTP
// server, for Claude Code's http hooks.
func cmdGateway(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := newFlagSet("gateway", stderr)
	var f bridgeFlags
	f.register(fs)
	listen := fs.String("listen", "", "address to listen on for Claude Code's http hooks (host:port; required)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `Usage: loop gateway --listen ADDR [flags]

Takes Claude Code's http hooks on POST http://ADDR`+GatewayPath+` (configure it for every
event, matcher "*"): each is recorded and decided as loop claude-hook does, on
one connection for a whole fleet.

Flags:`)
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	if *listen == "" {
		return fmt.Errorf("%w: loop gateway needs --listen ADDR", cli.ErrUsage)
	}
	log := cli.Logger(f.verbose, stderr)
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
	br, err := bridge.New(f.config(c.Bus, hooks, log))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("%w: --listen %s: %v", cli.ErrUsage, *listen, err)
	}
	srv := &http.Server{Handler: gatewayHandler(br, log), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stderr, "loop gateway: Claude Code http hooks on http://%s%s (%s)\n", ln.Addr(), GatewayPath, c.Where)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.timeout)
	defer cancel()
	return srv.Shutdown(sctx)
}

// gatewayHandler answers POST /claude-code with the bridge: 200 and
// Claude Code's output (the outage policy's when hookbus cannot answer in
// time); 400 for an input that cannot be read (Claude Code's non-blocking
// error).
func gatewayHandler(br *bridge.Bridge, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+GatewayPath, func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxHookInput))
		var in *claudecode.Input
		if err == nil {
			in, err = claudecode.ParseInput(raw)
		}
		var out *claudecode.Output
		if err == nil {
			out, err = br.Handle(r.Context(), in)
		}
		if out == nil {
			status := http.StatusBadRequest
			if !errors.Is(err, claudecode.ErrBadInput) && !errors.As(err, new(*http.MaxBytesError)) {
				status = http.StatusInternalServerError
			}
			http.Error(w, err.Error(), status)
			return
		}
		if err != nil {
			log.Warn("gateway: answered by policy", "event", in.HookEventName, "session", in.SessionID, "err", err)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out.JSON())
	})
	return mux
}
