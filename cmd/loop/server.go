package main

import (
	"context"
	"fmt"
	"io"

	"github.com/hookbus/hookbus/internal/cli"
)

// cmdServer runs the embedded server alone, listening, until interrupted.
func cmdServer(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := newFlagSet("server", stderr)
	conn := cli.ConnFlags{Embeds: true, EmbeddedOnly: true}
	conn.Register(fs)
	verbose := fs.Bool("v", false, cli.VerboseHelp)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: loop server [flags]\n\nRuns the embedded NATS server (JetStream, its store in --store) with hookbus' streams\nand buckets, listening for other processes until interrupted: runs (loop run --nats URL,\nloop submit), workers (loop serve --nats URL), interceptors and observers attach to it.\nIt has no authentication: a single-user development server.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	if conn.Listen == "none" || conn.Listen == "" {
		return fmt.Errorf("%w: loop server is for other processes: give it an address to --listen on", cli.ErrUsage)
	}
	c, err := conn.Open(ctx, "hookbus-server", cli.Logger(*verbose, stderr), cli.Provision)
	if err != nil {
		return err
	}
	defer c.Close()
	url := c.Embedded.ClientURL()
	fmt.Fprintf(stderr, "loop server: listening on %s (store %s); attach with --nats %s; interrupt to stop\n", url, c.Embedded.StoreDir(), url)
	<-ctx.Done()
	fmt.Fprintln(stderr, "loop server: stopped")
	return nil
}
