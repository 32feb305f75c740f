package main

import (
	"context"
	"fmt"
	"io"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// sessionsCmd lists the sessions: runs, last activity, the last run's
// status.
func sessionsCmd(a *cli.App) *cobra.Command {
	return cli.NoArgsCommand("sessions [flags]", "List the sessions: runs, last activity, the last run's status", `Lists the sessions with their runs, last activity and the last run's status, the most recent last.`, func(fs *pflag.FlagSet) cli.Run {
		stdout, stderr := a.Out, a.Err
		var d deskFlags
		d.register(a, fs, "one JSON object a session per line (audit.SessionSummary)")
		var scope scopeFlags
		scope.register(fs, "only this agent's sessions")
		return func(ctx context.Context, _ []string) error {
			filter, err := scope.filter()
			if err != nil {
				return err
			}
			var ss audit.Sessions
			if err := d.scan(ctx, filter, stderr, ss.Add); err != nil {
				return err
			}
			list := ss.List()
			if len(list) == 0 && (scope.agent != "" || scope.since > 0) {
				return fmt.Errorf("no sessions match")
			}
			if d.out.JSON() {
				return writeJSONLines(stdout, list)
			}
			return printSessions(stdout, list)
		}
	})
}

func printSessions(w io.Writer, list []audit.SessionSummary) error {
	tw := table(w, "AGENT\tSESSION\tRUNS\tEVENTS\tLAST ACTIVITY\tLAST RUN\tSTATUS\tTOKENS\tCALLED BY")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", s.AgentID, s.SessionID, s.Runs, s.Events,
			when(s.LastActivity), shortRun(s.LastRunID), s.LastStatus, tokens(s.Usage), calledBy(s.Parent))
	}
	return tw.Flush()
}
