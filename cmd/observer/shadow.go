package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hookbus/hookbus/audit/backtest"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

const shadowLong = `Reads the recorded events of stage S (and their hook.decided/hook.failed
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
P is sent only the events its registration matches, as the chain calls it:
its tools, kinds and agents filters as registered on S (observer hooks
list), or as --tools, --kinds and --agents give them; the others are counted
as not matched. Progress goes to stderr every second.
`

func shadowCmd(a *cli.App) *cobra.Command {
	return cli.NoArgsCommand("shadow --stage S --plugin P [flags]", "Backtest a candidate interceptor on recorded traffic", shadowLong, func(fs *pflag.FlagSet) cli.Run {
		conn := cli.ConnFlags{App: a, StoreFallback: true}
		conn.Register(fs)
		var o shadowOptions
		fs.StringVar(&o.stage, "stage", "", "stage whose recorded events are sent (e.g. tool.before); required")
		fs.StringVar(&o.plugin, "plugin", "", "candidate plugin (a remote interceptor serving the stage); required")
		fs.StringVar(&o.agent, "agent", "", "only this agent's events")
		fs.StringVar(&o.session, "session", "", "only this session's events")
		fs.DurationVar(&o.since, "since", 0, "only events newer than this (e.g. 168h)")
		fs.DurationVar(&o.timeout, "timeout", interceptors.DefaultTimeout, "per-call timeout of the candidate")
		fs.StringVar(&o.tools, "tools", "", "send only calls of tools matching this (a registration's tools matcher; default: P's registered one)")
		fs.StringVar(&o.kinds, "kinds", "", "send only calls of these action kinds (\"shell|file.write\"; default: P's registered ones)")
		fs.StringVar(&o.agents, "agents", "", "send only events of agents matching this (default: P's registered matcher)")
		o.out.Register(fs, "the report, indented")
		return func(ctx context.Context, _ []string) error {
			return shadow(ctx, a, &conn, o)
		}
	})
}

// shadowOptions are the flags of observer shadow.
type shadowOptions struct {
	stage, plugin, agent, session string
	tools, kinds, agents          string // the candidate's filters; empty: as registered
	since, timeout                time.Duration
	out                           cli.Output
}

func shadow(ctx context.Context, a *cli.App, conn *cli.ConnFlags, o shadowOptions) error {
	stdout, stderr := a.Out, a.Err
	if o.stage == "" || o.plugin == "" {
		return fmt.Errorf("%w: --stage and --plugin are required", cli.ErrUsage)
	}
	stage, err := events.ParseStage(o.stage)
	if err != nil {
		return fmt.Errorf("%w: --stage: %v", cli.ErrUsage, err)
	}
	reg := interceptors.Registration{Plugin: o.plugin, Stage: stage, Timeout: o.timeout, Uncapped: true,
		Tools: o.tools, Kinds: o.kinds, Agents: o.agents}
	if err := reg.Validate(); err != nil {
		return fmt.Errorf("%w: %w", cli.ErrUsage, err)
	}
	if o.since < 0 || o.timeout <= 0 {
		return fmt.Errorf("%w: --since and --timeout must be positive", cli.ErrUsage)
	}
	f := bus.Filter{Agent: o.agent, Session: o.session}
	if o.since > 0 {
		f.Since = time.Now().Add(-o.since)
	}
	c, gctx, release, err := conn.OpenGuarded(ctx, "hookbus-observer", a.Log.Logger(stderr), cli.ReadOnly)
	if err != nil {
		return err
	}
	defer release()
	if reg, err = registeredFilters(gctx, c.Bus, reg, o); err != nil {
		return c.Explain(err)
	}
	rep, err := backtest.Run(gctx, c.Bus, backtest.Config{Registration: reg, Filter: f, Progress: func(rep *backtest.Report) {
		fmt.Fprintf(stderr, "observer shadow: %d %s events read, %d sent, %d differ\n", rep.Scanned, rep.Stage, rep.Sent, rep.Differ)
	}})
	if err != nil {
		return c.Explain(usageIfInvalid(err))
	}
	if o.out.JSON() {
		return writeJSON(stdout, rep)
	}
	return printBacktest(stdout, rep)
}

func printBacktest(w io.Writer, rep *backtest.Report) error {
	fmt.Fprintf(w, "%s on %s: %d events read, %d sent, %d differ, %d not reconstructible, %d candidate failures, %d not matched\n",
		rep.Plugin, rep.Stage, rep.Scanned, rep.Sent, rep.Differ, rep.NotReconstructible, rep.Failed, rep.NotMatched)
	if len(rep.Differences) == 0 {
		return nil
	}
	tw := table(w, "TIME\tAGENT\tSESSION\tRUN\tEVENT\tSUBJECT\tRECORDED\tCANDIDATE\tREASON")
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

// registeredFilters fills the filters of reg the flags left empty from
// the candidate's registration on its stage, when it has one: the backtest
// sends it what the chain would have.
func registeredFilters(ctx context.Context, b *bus.Bus, reg interceptors.Registration, o shadowOptions) (interceptors.Registration, error) {
	got, err := remote.NewRegistry(b).Get(ctx, reg.Stage, reg.Plugin)
	switch {
	case errors.Is(err, remote.ErrNotFound):
		return reg, nil
	case err != nil:
		return reg, err
	}
	if o.tools == "" {
		reg.Tools = got.Tools
	}
	if o.kinds == "" {
		reg.Kinds = got.Kinds
	}
	if o.agents == "" {
		reg.Agents = got.Agents
	}
	return reg, nil
}
