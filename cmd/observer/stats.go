package main

import (
	"context"
	"fmt"
	"io"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/events"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// statsCmd prints, per plugin and stage, what the interceptors did.
func statsCmd(a *cli.App) *cobra.Command {
	return cli.NoArgsCommand("stats [flags]", "Per plugin and stage: calls, latency, decisions, failures", `Prints, per plugin and stage, the interceptors' calls: latency (p50, p99), decisions (allow, modify, deny, mock, ask, stop), failures by kind (timeout, no_responders, bad_reply, error, panic), and whether they failed open or closed.`, func(fs *pflag.FlagSet) cli.Run {
		stdout, stderr := a.Out, a.Err
		var d deskFlags
		d.register(a, fs, "one JSON object per plugin and stage a line (audit.PluginStats)")
		var scope scopeFlags
		scope.register(fs, "only the calls on this agent's runs")
		return func(ctx context.Context, _ []string) error {
			filter, err := scope.filter()
			if err != nil {
				return err
			}
			filter.Stages = audit.StatsStages
			var st audit.Stats
			if err := d.scan(ctx, filter, stderr, st.Add); err != nil {
				return err
			}
			return writeList(stdout, stderr, d.out.JSON(), st.List(), "no interceptor calls recorded", printStats)
		}
	})
}

func printStats(w io.Writer, list []audit.PluginStats) error {
	tw := table(w, "PLUGIN\tSTAGE\tCALLS\tP50\tP99\tALLOW\tMODIFY\tDENY\tMOCK\tASK\tSTOP\tTIMEOUT\tNO_RESP\tBAD_REPLY\tERROR\tPANIC\tOPEN\tCLOSED")
	for _, p := range list {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t", p.Plugin, p.Stage, p.Calls, micros(p.P50US), micros(p.P99US))
		for _, k := range []string{"allow", "modify", "deny", "mock", "ask", "stop"} {
			fmt.Fprintf(tw, "%s\t", count(p.Decisions[k]))
		}
		for _, k := range []string{events.FailTimeout, events.FailNoResponders, events.FailBadReply, events.FailError, events.FailPanic} {
			fmt.Fprintf(tw, "%s\t", count(p.Failures[k]))
		}
		fmt.Fprintf(tw, "%s\t%s\n", count(p.FailedOpen), count(p.FailedClosed))
	}
	return tw.Flush()
}

// count is n, or "-" for none (a table of zeros hides what happened).
func count(n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n)
}
