package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/bus/runs"

	"github.com/hookbus/hookbus/internal/cli"
	"github.com/hookbus/hookbus/internal/httpauth"
	"github.com/hookbus/hookbus/webui"
)

// cmdUI serves the web timeline until ctx is done.
func cmdUI(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("observer ui", flag.ContinueOnError)
	fs.SetOutput(stderr)
	conn := cli.ConnFlags{StoreFallback: true}
	conn.Register(fs)
	listen := fs.String("listen", "127.0.0.1:8080", "address the page is served on; off loopback give --token-file or --trusted-proxy, and --public-url")
	auth := httpauth.Flags{Proxies: true}
	auth.Register(fs)
	allow := fs.Bool("allow-approvals", false, "show Approve / Reject buttons and accept the answers they post, recorded under the signed-in identity (default: read-only)")
	var keys []string
	fs.Func("public-key", "a trusted signing key, for the run pages' \"record intact\" badge: the public nkey (printed by \"loop keygen\") or a file holding it; repeatable", func(v string) error {
		keys = append(keys, v)
		return nil
	})
	requireSigned := fs.Bool("require-signed", false, "the run pages' badge fails a run whose end is not signed (by a key given with --public-key, when any is), as observer verify --require-signed does")
	lease := fs.Duration("lease", runs.DefaultAckWait, "the workers' --lease: an unfinished run that recorded nothing for longer, and whose worker is no longer in the fleet, is shown as abandoned")
	verbose := fs.Bool("v", false, cli.VerboseHelp)
	fs.Usage = func() {
		fmt.Fprintln(stderr, `Usage: observer ui [flags]

Serves the web timeline: sessions and runs, a run's events and hook decisions, live updates,
plugin stats and pending approvals. Open the URL it prints in a browser.

It serves only its own host names (localhost, 127.0.0.1, [::1], and each --public-url).
On loopback without --token-file or --trusted-proxy every caller is the local user
(answers are recorded as local:USER); with a token file callers sign in (a login form, or
Authorization: Bearer TOKEN); behind an authenticating proxy its X-Forwarded-User is the
caller. docs/SECURITY.md has the details.

Flags:`)
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	if *lease < time.Second {
		return fmt.Errorf("%w: --lease %s is shorter than a second", cli.ErrUsage, *lease)
	}
	trust, err := trustedKeys(keys)
	if err != nil {
		return err
	}
	log := cli.Logger(*verbose, stderr)
	ln, err := auth.Listen(*listen, httpauth.Options{Name: "observer ui", Login: true, Logger: log})
	if err != nil {
		return listenErr(err)
	}
	defer ln.Close()
	c, err := conn.Open(ctx, "hookbus-observer-ui", log, cli.ReadOnly)
	if err != nil {
		return err
	}
	defer c.Close()
	srv, err := webui.New(webui.Config{Bus: c.Bus, AllowApprovals: *allow, Where: c.Where, Logger: log, Trust: trust, RequireSigned: *requireSigned,
		Fleet: runs.NewFleet(c.Bus), Lease: *lease, Registry: remote.NewRegistry(c.Bus)})
	if err != nil {
		return err
	}
	mode := "read-only"
	if *allow {
		mode = "approvals allowed"
	}
	fmt.Fprintf(stdout, "observer ui: %s (reading %s, %s; Ctrl-C stops)\n", ln.URL(), c.Where, mode)
	return ln.Serve(ctx, srv)
}

// listenErr makes a listener that cannot be opened or would be unprotected
// a usage mistake.
func listenErr(err error) error {
	if errors.Is(err, httpauth.ErrInvalidConfig) {
		return fmt.Errorf("%w: %w", cli.ErrUsage, err)
	}
	return err
}
