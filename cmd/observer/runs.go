package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/events"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// runStatuses are what --reason takes: the reasons of run.completed and
// the statuses of runs that did not end so.
var runStatuses = []string{events.ReasonDone, events.ReasonDenied, events.ReasonStopped, events.ReasonRejected,
	events.ReasonMaxSteps, events.ReasonCostLimit, events.ReasonInterrupted,
	audit.StatusFailed, audit.StatusWaiting, audit.StatusUnfinished}

// runsCmd lists the runs: id, agent, session, start, duration, steps,
// status, tokens.
func runsCmd(a *cli.App) *cobra.Command {
	return cli.NoArgsCommand("runs [flags]", "List the runs, and the requests still queued", `Lists the runs, oldest first: id (a prefix that show and replay --run take), agent, session, start, duration, steps, status (the reason it ended), tokens (and cost when known);
then the requests still on the run queue, and what each waits for ("no worker serves agent ops").`, func(fs *pflag.FlagSet) cli.Run {
		stdout, stderr := a.Out, a.Err
		var d deskFlags
		d.register(a, fs, "one JSON object a run per line (audit.RunSummary)")
		agent := fs.String("agent", "", "only this agent's runs")
		session := fs.String("session", "", "only this session's runs")
		sinceD := fs.Duration("since", 0, "only events stored in this last while (e.g. 24h)")
		reason := fs.String("reason", "", "only runs that ended so, or are so: "+strings.Join(runStatuses, ", "))
		queuedOnly := fs.Bool("queued", false, "list the run requests on the run queue instead (not started yet, or waiting for a worker with their definition): run, agent, session, definition, age, and what each waits for; with --json one object a line")
		return func(ctx context.Context, _ []string) error {
			if err := validID("agent", *agent); err != nil {
				return err
			}
			if err := validID("session", *session); err != nil {
				return err
			}
			if *reason != "" && !slices.Contains(runStatuses, *reason) {
				return fmt.Errorf("%w: --reason %q (known: %s)", cli.ErrUsage, *reason, strings.Join(runStatuses, ", "))
			}
			if *queuedOnly {
				if *reason != "" || *sinceD != 0 {
					return fmt.Errorf("%w: --queued lists the requests on the queue: --reason and --since select recorded runs", cli.ErrUsage)
				}
				return queuedRequests(ctx, &d, *agent, *session, stdout, stderr)
			}
			from, err := since(*sinceD)
			if err != nil {
				return err
			}
			var rs audit.Runs
			var queue []queuedRun
			readQueued := func(ctx context.Context, c *cli.Conn) error {
				q, err := readQueue(ctx, c, *agent, *session, stderr)
				if err != nil {
					fmt.Fprintf(stderr, "the run queue was not read: %v\n", err)
				}
				queue = q
				return nil
			}
			if d.out.JSON() || *reason != "" || *sinceD > 0 {
				readQueued = nil // the recorded runs only
			}
			if err := d.scanThen(ctx, bus.Filter{Agent: *agent, Session: *session, Since: from}, stderr, rs.Add, readQueued); err != nil {
				return err
			}
			var list []audit.RunSummary
			for _, r := range rs.List() {
				if *reason == "" || r.Status == *reason {
					list = append(list, r)
				}
			}
			if len(list) == 0 && len(queue) == 0 && (*agent != "" || *session != "" || *sinceD > 0 || *reason != "") {
				return fmt.Errorf("no runs match")
			}
			if d.out.JSON() {
				return writeJSONLines(stdout, list)
			}
			if err := printRuns(stdout, list); err != nil {
				return err
			}
			if len(queue) == 0 {
				return nil
			}
			fmt.Fprintln(stdout)
			return printQueue(stdout, queue)
		}
	})
}

func printRuns(w io.Writer, list []audit.RunSummary) error {
	tw := table(w, "RUN\tAGENT\tSESSION\tSTART\tDURATION\tSTEPS\tSTATUS\tTOKENS\tWORKER\tCALLED BY")
	for _, r := range list {
		worker := cmp.Or(r.Worker, "-")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", shortRun(r.RunID), r.AgentID, r.SessionID,
			when(r.Start), duration(r.Duration()), r.Steps, r.Status, tokens(r.Usage), worker, calledBy(r.Parent))
	}
	return tw.Flush()
}
