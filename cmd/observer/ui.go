package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/hookbus/hookbus/internal/cli"
	"github.com/hookbus/hookbus/webui"
)

// cmdUI serves the web timeline until ctx is done.
func cmdUI(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("observer ui", flag.ContinueOnError)
	fs.SetOutput(stderr)
	conn := cli.ConnFlags{StoreFallback: true}
	conn.Register(fs)
	listen := fs.String("listen", "127.0.0.1:8080", "address the page is served on (keep it on loopback unless a proxy authenticates)")
	allow := fs.Bool("allow-approvals", false, "show Approve / Reject buttons and accept the answers they post (default: read-only)")
	var keys []string
	fs.Func("public-key", "a trusted signing key, for the run pages' \"record intact\" badge: the public nkey (printed by \"loop keygen\") or a file holding it; repeatable", func(v string) error {
		keys = append(keys, v)
		return nil
	})
	requireSigned := fs.Bool("require-signed", false, "the run pages' badge fails a run whose end is not signed (by a key given with --public-key, when any is), as observer verify --require-signed does")
	verbose := fs.Bool("v", false, cli.VerboseHelp)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: observer ui [flags]\n\nServes the web timeline: sessions and runs, a run's events and hook decisions, live updates,\nplugin stats and pending approvals. Open the URL it prints in a browser.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	trust, err := trustedKeys(keys)
	if err != nil {
		return err
	}
	log := cli.Logger(*verbose, stderr)
	c, err := conn.Open(ctx, "hookbus-observer-ui", log, cli.ReadOnly)
	if err != nil {
		return err
	}
	defer c.Close()
	srv, err := webui.New(webui.Config{Bus: c.Bus, AllowApprovals: *allow, Where: c.Where, Logger: log, Trust: trust, RequireSigned: *requireSigned})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("%w: --listen %s: %v", cli.ErrUsage, *listen, err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	mode := "read-only"
	if *allow {
		mode = "approvals allowed"
	}
	fmt.Fprintf(stdout, "observer ui: http://%s/ (reading %s, %s; Ctrl-C stops)\n", ln.Addr(), c.Where, mode)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
