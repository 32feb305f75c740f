package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/hookbus/hookbus/bus/budgets"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/events"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

const budgetsLong = `A shared budget bounds what an agent (or, with --per-session, each of its
sessions) may use per period (aligned on the Unix epoch: 24h runs from
midnight UTC), in tokens (input plus output) and in US dollars, across every
worker. Workers reserve each model call against it and charge what it used;
a run with no room left ends with reason cost_limit naming the budget. list
(the default) shows use against limits, and the model calls under way. set
and rm record who did it: the NATS user of the connection, as the server
authenticated it (--note is kept beside it as a note).`

// budgetsCmd is "observer budgets [list|set|rm]": list when no subcommand
// is given.
func budgetsCmd(a *cli.App) *cobra.Command {
	cmd := budgetsSub(a, "list")
	cmd.Use, cmd.Short, cmd.Long = "budgets [list|set|rm] [flags]", "The fleet's shared budgets: use against limits", budgetsLong
	cmd.AddCommand(budgetsSub(a, "list"), budgetsSub(a, "set"), budgetsSub(a, "rm"))
	return cmd
}

// budgetsSub is one subcommand of observer budgets.
func budgetsSub(a *cli.App, sub string) *cobra.Command {
	var use, short string
	switch sub {
	case "list":
		use, short = "list [flags]", "Show each budget's use against its limits"
	case "set":
		use, short = "set --agent A --period D [--tokens N] [--cost USD] [--per-session] [flags]", "Set an agent's shared budget"
	case "rm":
		use, short = "rm --agent A [flags]", "Remove an agent's shared budget"
	}
	return cli.Command(use, short, budgetsLong, func(fs *pflag.FlagSet) cli.Run {
		o := budgetOptions{sub: sub, conn: cli.ConnFlags{App: a, StoreFallback: true}}
		o.conn.Register(fs)
		switch sub {
		case "list":
			o.out.Register(fs, "{\"limits\": [...], \"uses\": [...]}, indented")
		case "set":
			fs.StringVar(&o.agent, "agent", "", "agent id (required)")
			fs.DurationVar(&o.period, "period", 0, "budget period, e.g. 24h (required)")
			fs.Int64Var(&o.tokens, "tokens", 0, "most tokens (input plus output) per period")
			fs.Float64Var(&o.cost, "cost", 0, "most US dollars per period")
			fs.BoolVar(&o.perSession, "per-session", false, "one budget per session of the agent")
		case "rm":
			fs.StringVar(&o.agent, "agent", "", "agent id (required)")
		}
		if sub != "list" {
			fs.StringVar(&o.note, "note", "", "a name to record beside who did it, as a note")
		}
		return func(ctx context.Context, pos []string) error {
			if len(pos) > 0 {
				return fmt.Errorf("%w: unexpected argument %q (want list, set or rm)", cli.ErrUsage, pos[0])
			}
			return o.run(ctx, a)
		}
	})
}

// budgetOptions are the flags of observer budgets' subcommands.
type budgetOptions struct {
	sub        string
	conn       cli.ConnFlags
	out        cli.Output
	agent      string
	period     time.Duration
	tokens     int64
	cost       float64
	perSession bool
	note       string
}

func (o *budgetOptions) run(ctx context.Context, a *cli.App) error {
	stdout, stderr, sub, conn := a.Out, a.Err, o.sub, &o.conn
	who := events.Actor{Channel: events.ChannelCLI, DeclaredBy: o.note}
	limit := budgets.Limit{Agent: o.agent, Period: o.period, Tokens: o.tokens, CostUSD: o.cost, PerSession: o.perSession, By: &who}
	switch sub {
	case "set":
		if err := limit.Validate(); err != nil {
			return fmt.Errorf("%w: %w", cli.ErrUsage, err)
		}
	case "rm":
		if o.agent == "" {
			return fmt.Errorf("%w: --agent is required", cli.ErrUsage)
		}
	}
	mode := cli.ProvisionStore
	if sub == "list" {
		mode = cli.ReadOnly
	}
	c, gctx, release, err := conn.OpenGuarded(ctx, "hookbus-observer", a.Log.Logger(stderr), mode)
	if err != nil {
		return err
	}
	defer release()
	sb := budgets.New(c.Bus)
	switch sub {
	case "set":
		if err := sb.SetLimit(gctx, limit); err != nil {
			return c.Explain(usageIfInvalid(err))
		}
		fmt.Fprintf(stdout, "budget of %s set: %s\n", limit.Agent, describeLimit(limit))
		return nil
	case "rm":
		if err := sb.RemoveLimit(gctx, o.agent, who); err != nil {
			return c.Explain(usageIfInvalid(err))
		}
		fmt.Fprintf(stdout, "budget of %s removed\n", o.agent)
		return nil
	}
	limits, uses, err := sb.List(gctx)
	if err != nil {
		return c.Explain(err)
	}
	if o.out.JSON() {
		return writeJSON(stdout, struct {
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
	tw := table(w, "AGENT\tSESSION\tPERIOD\tSINCE\tTOKENS\tCOST\tUNDER WAY")
	for _, l := range limits {
		rows := byAgent[l.Agent]
		if len(rows) == 0 {
			rows = []budgets.Use{{Agent: l.Agent}}
		}
		for _, u := range rows {
			session := "*"
			if l.PerSession {
				session = cmp.Or(u.Session, "(each)")
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
