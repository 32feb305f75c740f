package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/hookbus/hookbus/audit/backtest"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/internal/cli"
)

const shadowUsage = `observer shadow — backtest a candidate interceptor on recorded traffic

Usage:
  observer shadow --stage S --plugin P [--since D] [--agent A] [--session S] [--timeout D] [--json] [connection]

Reads the recorded events of stage S (and their hook.decided/hook.failed
records) from the stream, sends each to the remote plugin P over NATS as the
loop calls it (request to <prefix>.hook.<stage>.<plugin>), and reports every
event where P decides differently from what was recorded: P's own recorded
decision when P was in the chain, else the chain's outcome (the decision
that ended it, deny for a fail-closed failure, else allow). No run is
touched: decisions are only compared. The input P gets is the event as
stored, which is what P saw (or would see at the end of the chain) unless P
or a later interceptor modified it; then it is rebuilt from the payload the
stream records before the chain (a tool call as the model asked for it, a
tool's raw result) and the patches of the interceptors before P, and where
the stream does not record that payload the event is counted as not
reconstructible and not sent (docs/PROTOCOL.md, "Shadow backtests").
Progress goes to stderr every second.
`

func cmdShadow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("observer shadow", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, shadowUsage) }
	conn := cli.ConnFlags{StoreFallback: true}
	conn.Register(fs)
	verbose := fs.Bool("v", false, cli.VerboseHelp)
	stageName := fs.String("stage", "", "stage whose recorded events are sent (e.g. tool.before); required")
	plugin := fs.String("plugin", "", "candidate plugin (a remote interceptor serving the stage); required")
	agent := fs.String("agent", "", "only this agent's events")
	session := fs.String("session", "", "only this session's events")
	since := fs.Duration("since", 0, "only events newer than this (e.g. 168h)")
	timeout := fs.Duration("timeout", interceptors.DefaultTimeout, "per-call timeout of the candidate")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := cli.ParseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, pos[0])
	}
	if *stageName == "" || *plugin == "" {
		return fmt.Errorf("%w: --stage and --plugin are required", cli.ErrUsage)
	}
	stage, err := events.ParseStage(*stageName)
	if err != nil {
		return fmt.Errorf("%w: --stage: %v", cli.ErrUsage, err)
	}
	reg := interceptors.Registration{Plugin: *plugin, Stage: stage, Timeout: *timeout, Uncapped: true}
	if err := reg.Validate(); err != nil {
		return fmt.Errorf("%w: %w", cli.ErrUsage, err)
	}
	if *since < 0 || *timeout <= 0 {
		return fmt.Errorf("%w: --since and --timeout must be positive", cli.ErrUsage)
	}
	f := bus.Filter{Agent: *agent, Session: *session}
	if *since > 0 {
		f.Since = time.Now().Add(-*since)
	}
	c, err := conn.Open(ctx, "hookbus-observer", cli.Logger(*verbose, stderr), cli.ReadOnly)
	if err != nil {
		return err
	}
	defer c.Close()
	gctx, stop := c.Guard(ctx)
	defer stop()
	rep, err := backtest.Run(gctx, c.Bus, backtest.Config{Registration: reg, Filter: f, Progress: func(rep *backtest.Report) {
		fmt.Fprintf(stderr, "observer shadow: %d %s events read, %d sent, %d differ\n", rep.Scanned, rep.Stage, rep.Sent, rep.Differ)
	}})
	if err != nil {
		return c.Explain(usageIfInvalid(err))
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return printBacktest(stdout, rep)
}

func printBacktest(w io.Writer, rep *backtest.Report) error {
	fmt.Fprintf(w, "%s on %s: %d events read, %d sent, %d differ, %d not reconstructible, %d candidate failures\n",
		rep.Plugin, rep.Stage, rep.Scanned, rep.Sent, rep.Differ, rep.NotReconstructible, rep.Failed)
	if len(rep.Differences) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tAGENT\tSESSION\tRUN\tEVENT\tSUBJECT\tRECORDED\tCANDIDATE\tREASON")
	for _, r := range rep.Differences {
		rec := r.Recorded
		if r.RecordedBy != "" {
			rec += " (" + r.RecordedBy + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Time.UTC().Format(time.RFC3339), r.Agent, r.Session, r.Run,
			r.EventID, r.Subject, rec, r.Candidate, r.Reason)
	}
	return tw.Flush()
}
