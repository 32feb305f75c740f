package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/internal/cli"
)

// cmdSessions lists the sessions: runs, last activity, the last run's
// status.
func cmdSessions(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("observer sessions", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var d deskFlags
	d.register(fs, "one JSON object a session per line (audit.SessionSummary)")
	agent := fs.String("agent", "", "only this agent's sessions")
	sinceD := fs.Duration("since", 0, "only events stored in this last while (e.g. 24h)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: observer sessions [flags]\n\nLists the sessions with their runs, last activity and the last run's status, the most recent last.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	if err := validID("agent", *agent); err != nil {
		return err
	}
	from, err := since(*sinceD)
	if err != nil {
		return err
	}
	var ss audit.Sessions
	if err := d.scan(ctx, bus.Filter{Agent: *agent, Since: from}, stderr, ss.Add); err != nil {
		return err
	}
	list := ss.List()
	if len(list) == 0 && (*agent != "" || *sinceD > 0) {
		return fmt.Errorf("no sessions match")
	}
	if d.asJSON {
		return writeJSONLines(stdout, list)
	}
	return printSessions(stdout, list)
}

func printSessions(w io.Writer, list []audit.SessionSummary) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tSESSION\tRUNS\tEVENTS\tLAST ACTIVITY\tLAST RUN\tSTATUS\tTOKENS\tCALLED BY")
	for _, s := range list {
		parent := "-"
		if s.Parent != nil {
			parent = "run " + shortRun(s.Parent.RunID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", s.AgentID, s.SessionID, s.Runs, s.Events,
			when(s.LastActivity), shortRun(s.LastRunID), s.LastStatus, tokens(s.Usage), parent)
	}
	return tw.Flush()
}
