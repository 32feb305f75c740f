package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookbus/hookbus/bus/policies"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/bus/runs"

	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/cmd/internal/health"
	"github.com/hookbus/hookbus/internal/httpauth"
	"github.com/hookbus/hookbus/webui"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

const uiLong = `Serves the web timeline: sessions and runs, a run's events and hook decisions, live updates,
plugin stats and pending approvals. Open the URL it prints in a browser.

It serves only its own host names (localhost, 127.0.0.1, [::1], and each --public-url).
On loopback without --token-file or --trusted-proxy every caller is the local user
(answers are recorded as local:USER); with a token file callers sign in (a login form, or
Authorization: Bearer TOKEN); behind an authenticating proxy its X-Forwarded-User is the
caller. It serves HTTPS with --http-tls-cert and --http-tls-key. docs/SECURITY.md has the
details. With --metrics it serves /metrics, /healthz and /readyz on another address.`

// uiCmd serves the web timeline until ctx is done.
func uiCmd(a *cli.App) *cobra.Command {
	return cli.NoArgsCommand("ui [flags]", "Serve the web timeline", uiLong, func(fs *pflag.FlagSet) cli.Run {
		stdout, stderr := a.Out, a.Err
		conn := cli.ConnFlags{App: a, StoreFallback: true, Await: true}
		conn.Register(fs)
		listen := fs.String("listen", "127.0.0.1:8080", "address the page is served on; off loopback give --token-file or --trusted-proxy, and --public-url")
		auth := httpauth.Flags{Proxies: true, Login: true}
		auth.Register(fs)
		allow := fs.Bool("allow-approvals", false, "show Approve / Reject buttons and accept the answers they post, recorded under the signed-in identity (default: read-only)")
		var keys []string
		fs.Func("public-key", "a trusted signing `KEY`, for the run pages' \"record intact\" badge: the public nkey (printed by \"loop keygen\") or a file holding it; repeatable", func(v string) error {
			keys = append(keys, v)
			return nil
		})
		var admin cli.AdminFlags
		admin.Register(fs, "127.0.0.1:9468", 5*time.Second, "let the requests in flight finish (live updates end at once)")
		requireSigned := fs.Bool("require-signed", false, "the run pages' badge fails a run whose end is not signed (by a key given with --public-key, when any is), as observer verify --require-signed does")
		lease := fs.Duration("lease", runs.DefaultAckWait, "the workers' --lease: an unfinished run that recorded nothing for longer, and whose worker is no longer in the fleet, is shown as abandoned")
		return func(ctx context.Context, _ []string) error {
			if *lease < time.Second {
				return fmt.Errorf("%w: --lease %s is shorter than a second", cli.ErrUsage, *lease)
			}
			if err := admin.Check(); err != nil {
				return err
			}
			trust, err := trustedKeys(keys)
			if err != nil {
				return err
			}
			log := a.Log.Logger(stderr)
			ln, err := auth.Listen(*listen, httpauth.Options{Name: "observer ui", Login: true, Logger: log, ShutdownTimeout: admin.Drain})
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
				Fleet: runs.NewFleet(c.Bus), Lease: *lease, Registry: remote.NewRegistry(c.Bus), Policies: policies.New(c.Bus)})
			if err != nil {
				return err
			}
			mode := "read-only"
			if *allow {
				mode = "approvals allowed"
			}
			h := health.New()
			c.HealthChecks(h)
			adm, err := admin.Serve("observer ui", log, nil, h)
			if err != nil {
				return err
			}
			defer adm.Stop()
			adm.Say(&a.Log, stderr)
			fmt.Fprintf(stdout, "observer ui: %s (reading %s, %s; Ctrl-C stops)\n", ln.URL(), c.Where, mode)
			served := make(chan error, 1)
			go func() { served <- ln.Serve(ctx, srv) }()
			select {
			case err := <-served:
				return err
			case <-ctx.Done():
			}
			h.Drain()
			return <-served
		}
	})
}

// listenErr makes a listener that cannot be opened or would be unprotected
// a usage mistake.
func listenErr(err error) error {
	if errors.Is(err, httpauth.ErrInvalidConfig) {
		return fmt.Errorf("%w: %w", cli.ErrUsage, err)
	}
	return err
}
