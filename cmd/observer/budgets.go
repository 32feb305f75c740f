package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/hookbus/hookbus/bus/budgets"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/internal/cli"
)

const budgetsUsage = `observer budgets — the fleet's shared budgets

Usage:
  observer budgets [list] [--json] [connection]
  observer budgets set --agent A --period D [--tokens N] [--cost USD] [--per-session] [--note TEXT] [connection]
  observer budgets rm  --agent A [--note TEXT] [connection]

A shared budget bounds what an agent (or, with --per-session, each of its
sessions) may use per period (aligned on the Unix epoch: 24h runs from
midnight UTC), in tokens (input plus output) and in US dollars, across every
worker. Workers reserve each model call against it and charge what it used;
a run with no room left ends with reason cost_limit naming the budget. list
shows use against limits, and the model calls under way. set and rm record
who did it: the NATS user of the connection, as the server authenticated it
(--note is kept beside it as a note).
`

// cmdBudgets runs "observer budgets [SUBCOMMAND] ...".
func cmdBudgets(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub := "list"
	if len(args) > 0 && (args[0] == "list" || args[0] == "set" || args[0] == "rm") {
		sub, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("observer budgets "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, budgetsUsage) }
	conn := cli.ConnFlags{StoreFallback: true}
	conn.Register(fs)
	verbose := fs.Bool("v", false, cli.VerboseHelp)
	asJSON := fs.Bool("json", false, "print JSON (list)")
	agent := fs.String("agent", "", "agent id (set, rm)")
	period := fs.Duration("period", 0, "budget period, e.g. 24h (set)")
	tokens := fs.Int64("tokens", 0, "most tokens (input plus output) per period (set)")
	cost := fs.Float64("cost", 0, "most US dollars per period (set)")
	perSession := fs.Bool("per-session", false, "one budget per session of the agent (set)")
	note := fs.String("note", "", "a name to record beside who did it, as a note (set, rm)")
	pos, err := cli.ParseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: unexpected argument %q (want list, set or rm)", cli.ErrUsage, pos[0])
	}
	who := events.Actor{Channel: events.ChannelCLI, DeclaredBy: *note}
	limit := budgets.Limit{Agent: *agent, Period: *period, Tokens: *tokens, CostUSD: *cost, PerSession: *perSession, By: &who}
	switch sub {
	case "set":
		if err := limit.Validate(); err != nil {
			return fmt.Errorf("%w: %w", cli.ErrUsage, err)
		}
	case "rm":
		if *agent == "" {
			return fmt.Errorf("%w: --agent is required", cli.ErrUsage)
		}
	}
	mode := cli.ProvisionStore
	if sub == "list" {
		mode = cli.ReadOnly
	}
	c, err := conn.Open(ctx, "hookbus-observer", cli.Logger(*verbose, stderr), mode)
	if err != nil {
		return err
	}
	defer c.Close()
	gctx, stop := c.Guard(ctx)
	defer stop()
	sb := budgets.New(c.Bus)
	switch sub {
	case "set":
		if err := sb.SetLimit(gctx, limit); err != nil {
			return c.Explain(usageIfInvalid(err))
		}
		fmt.Fprintf(stdout, "budget of %s set: %s\n", limit.Agent, describeLimit(limit))
		return nil
	case "rm":
		if err := sb.RemoveLimit(gctx, *agent, who); err != nil {
			return c.Explain(usageIfInvalid(err))
		}
		fmt.Fprintf(stdout, "budget of %s removed\n", *agent)
		return nil
	}
	limits, uses, err := sb.List(gctx)
	if err != nil {
		return c.Explain(err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Limits []budgets.Limit `json:"limits"`
			Uses   []budgets.Use   `json:"uses"`
		}{limits, uses})
	}
	return printBudgets(stdout, limits, uses)
}

func describeLimit(l budgets.Limit) string {
	s := "per " + l.Period.String()
	if l.PerSession {
		s += " per session"
	}
	if l.Tokens > 0 {
		s += fmt.Sprintf(", %d tokens", l.Tokens)
	}
	if l.CostUSD > 0 {
		s += fmt.Sprintf(", $%.2f", l.CostUSD)
	}
	return s
}

// printBudgets prints one row per budget use (and one per budget not used
// yet this period).
func printBudgets(w io.Writer, limits []budgets.Limit, uses []budgets.Use) error {
	if len(limits) == 0 {
		fmt.Fprintln(w, "no shared budgets")
		return nil
	}
	byAgent := map[string][]budgets.Use{}
	for _, u := range uses {
		byAgent[u.Agent] = append(byAgent[u.Agent], u)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tSESSION\tPERIOD\tSINCE\tTOKENS\tCOST\tUNDER WAY")
	for _, l := range limits {
		rows := byAgent[l.Agent]
		if len(rows) == 0 {
			rows = []budgets.Use{{Agent: l.Agent}}
		}
		for _, u := range rows {
			session := "*"
			if l.PerSession {
				session = u.Session
				if session == "" {
					session = "(each)"
				}
			}
			since := "-"
			if !u.Since.IsZero() {
				since = u.Since.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", l.Agent, session, l.Period, since,
				ofLimit(fmt.Sprint(u.Tokens), l.Tokens > 0, fmt.Sprint(l.Tokens)),
				ofLimit(fmt.Sprintf("$%.4f", u.CostUSD), l.CostUSD > 0, fmt.Sprintf("$%.4f", l.CostUSD)), len(u.Reserved))
		}
	}
	return tw.Flush()
}

func ofLimit(used string, bounded bool, limit string) string {
	if !bounded {
		return used + " (no limit)"
	}
	return used + " / " + limit
}
