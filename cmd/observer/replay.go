package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/events"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// filterFlags are the event filters of replay and tail.
type filterFlags struct {
	agent, session, run, stage string
	since                      time.Duration
}

func (f *filterFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.agent, "agent", "", "only this agent")
	fs.StringVar(&f.session, "session", "", "only this session")
	fs.StringVar(&f.run, "run", "", "only this run: its id, or a unique prefix of it (as the timeline shows it)")
	fs.StringVar(&f.stage, "stage", "", "only this stage (e.g. tool.before)")
	fs.DurationVar(&f.since, "since", 0, "only events newer than this (e.g. 10m)")
}

// filter validates the flags into a bus.Filter, without the run (a prefix,
// which runPrefix returns); a bad id or stage is a usage error naming it.
func (f *filterFlags) filter() (bus.Filter, error) {
	var out bus.Filter
	for _, id := range []struct{ kind, v string }{{"agent", f.agent}, {"session", f.session}, {"run", f.runPrefix()}} {
		if id.v == "" {
			continue
		}
		if err := events.ValidateID(id.kind, id.v); err != nil {
			return out, fmt.Errorf("%w: %v", cli.ErrUsage, err)
		}
	}
	if f.run != "" && f.runPrefix() == "" {
		return out, fmt.Errorf("%w: --run %q holds no run id", cli.ErrUsage, f.run)
	}
	out.Agent, out.Session = f.agent, f.session
	if f.stage != "" {
		st, err := events.ParseStage(f.stage)
		if err != nil {
			return out, fmt.Errorf("%w: %v", cli.ErrUsage, err)
		}
		out.Stages = []events.Stage{st}
	}
	if f.since < 0 {
		return out, fmt.Errorf("%w: --since %s is negative", cli.ErrUsage, f.since)
	}
	if f.since > 0 {
		out.Since = time.Now().Add(-f.since)
	}
	return out, nil
}

// runPrefix is --run without the ellipsis a copied timeline id ends in.
func (f *filterFlags) runPrefix() string {
	return strings.TrimSuffix(strings.TrimSuffix(f.run, "…"), "...")
}

// describe names the filters given, for "nothing matches" messages.
func (f *filterFlags) describe() string {
	var parts []string
	for _, p := range []struct{ flag, v string }{{"--agent", f.agent}, {"--session", f.session}, {"--run", f.run}, {"--stage", f.stage}} {
		if p.v != "" {
			parts = append(parts, p.flag+" "+p.v)
		}
	}
	if f.since > 0 {
		parts = append(parts, "--since "+f.since.String())
	}
	return strings.Join(parts, " ")
}

const replayLong = `Prints the events that match the filters, in stream order, and exits (1 when
the filters match nothing). --run takes a run id or a unique prefix of one (the
timeline shows run ids shortened to a prefix).`

const tailLong = `Follows new events that match the filters, until interrupted. tail needs a
running server (--nats, --context, or the server on nats://127.0.0.1:4222).`

// replayCmd is observer replay, or with live observer tail.
func replayCmd(a *cli.App, live bool) *cobra.Command {
	use, short, long := "replay [flags]", "Print the events that match, in stream order", replayLong
	if live {
		use, short, long = "tail [flags]", "Follow new events as they are stored", tailLong
	}
	return cli.NoArgsCommand(use, short, long, func(fs *pflag.FlagSet) cli.Run {
		o := replayOptions{live: live, conn: cli.ConnFlags{App: a, StoreFallback: !live}}
		o.conn.Register(fs)
		o.ff.register(fs)
		o.out.Register(fs, "one CloudEvent (JSON format) per line", cli.OutputText, cli.OutputJSON)
		if !live {
			fs.BoolVar(&o.tree, "tree", false, "with --run: the run with the sub-agent runs it called nested under it")
		}
		return func(ctx context.Context, _ []string) error {
			return o.replay(ctx, a)
		}
	})
}

// replayOptions are the flags of observer replay and tail.
type replayOptions struct {
	live bool
	conn cli.ConnFlags
	ff   filterFlags
	out  cli.Output
	tree bool
}

func (o *replayOptions) replay(ctx context.Context, a *cli.App) error {
	live, conn, ff, tree, stdout, stderr := o.live, &o.conn, o.ff, o.tree, a.Out, a.Err
	filter, err := ff.filter()
	if err != nil {
		return err
	}
	if tree && ff.run == "" {
		return fmt.Errorf("%w: --tree needs --run", cli.ErrUsage)
	}
	if live && conn.Store != "" {
		return fmt.Errorf("%w: tail follows a running server (--nats); replay reads a store (--store)", cli.ErrUsage)
	}
	c, gctx, release, err := conn.OpenGuarded(ctx, "hookbus-observer", a.Log.Logger(stderr), cli.ReadOnly)
	if err != nil {
		return err
	}
	defer release()
	print := cli.PrintTimeline
	if o.out.JSON() {
		print = cli.PrintJSON
	}
	if live {
		return c.Explain(tail(gctx, c.Bus, filter, ff, stdout, stderr, print))
	}
	if tree {
		return c.Explain(replayTree(gctx, c.Bus, filter, ff, stdout, stderr, o.out.JSON()))
	}
	return c.Explain(replay(gctx, c.Bus, filter, ff, stdout, stderr, print))
}

// replayTree prints the run --run names with the sub-agent runs it called
// nested under it (children run under other agents and sessions, so only
// --stage and --since filter them).
func replayTree(ctx context.Context, b *bus.Bus, filter bus.Filter, ff filterFlags, stdout, stderr io.Writer, asJSON bool) error {
	prefix := ff.runPrefix()
	runs, err := runsStartingWith(ctx, b, filter, prefix)
	if err != nil {
		return err
	}
	root, err := pick(prefix, runs)
	if err != nil {
		return err
	}
	filter.Run, filter.Agent, filter.Session = "", "", ""
	st, err := b.Replay(ctx, filter, treeFilter(root, func(e *events.Event, depth int) error {
		if asJSON {
			return cli.PrintJSON(stdout, e)
		}
		fmt.Fprint(stdout, strings.Repeat("    ", depth))
		return cli.PrintTimeline(stdout, e)
	}))
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%d events read\n", st.Events)
	return nil
}

type printer func(io.Writer, *events.Event) error

// replay prints the events of filter and the run prefix, and a summary on
// stderr (in both formats: stdout stays one event a line with --json).
func replay(ctx context.Context, b *bus.Bus, filter bus.Filter, ff filterFlags, stdout, stderr io.Writer, print printer) error {
	prefix := ff.runPrefix()
	var (
		held []*events.Event // with a run prefix: the events of runs that match it
		runs []string        // the run ids seen that start with the prefix
	)
	st, err := b.Replay(ctx, filter, func(e *events.Event) error {
		if prefix == "" {
			return print(stdout, e)
		}
		if !strings.HasPrefix(e.RunID, prefix) {
			return nil
		}
		if !slices.Contains(runs, e.RunID) {
			runs = append(runs, e.RunID)
		}
		held = append(held, e)
		return nil
	})
	if err != nil {
		return err
	}
	if prefix != "" {
		run, err := pick(prefix, runs)
		if err != nil {
			return err
		}
		st.Events = 0
		for _, e := range held {
			if e.RunID != run {
				continue
			}
			st.Events++
			if err := print(stdout, e); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(stderr, "%d events", st.Events)
	if st.Malformed > 0 {
		fmt.Fprintf(stderr, ", %d malformed messages skipped", st.Malformed)
	}
	if st.Unfetched > 0 {
		fmt.Fprintf(stderr, ", %d without their data (the object of their dataref is gone)", st.Unfetched)
	}
	fmt.Fprintln(stderr)
	if st.Events == 0 {
		if d := ff.describe(); d != "" {
			return fmt.Errorf("no events match %s", d)
		}
	}
	return nil
}

// runsStartingWith returns the ids of the runs of filter's stored events
// that start with prefix, in the order they were first stored.
func runsStartingWith(ctx context.Context, b *bus.Bus, filter bus.Filter, prefix string) ([]string, error) {
	var runs []string
	_, err := b.Replay(ctx, filter, func(e *events.Event) error {
		if strings.HasPrefix(e.RunID, prefix) && !slices.Contains(runs, e.RunID) {
			runs = append(runs, e.RunID)
		}
		return nil
	})
	return runs, err
}

// pick returns the run prefix names: the run whose id is prefix, else the
// only one that starts with it.
func pick(prefix string, runs []string) (string, error) {
	if slices.Contains(runs, prefix) {
		return prefix, nil
	}
	switch len(runs) {
	case 0:
		return "", fmt.Errorf("no run id starts with %q among the events the other filters select", prefix)
	case 1:
		return runs[0], nil
	}
	slices.Sort(runs)
	shown := runs
	if len(shown) > 5 {
		shown = shown[:5]
	}
	more := ""
	if len(runs) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(runs)-len(shown))
	}
	return "", fmt.Errorf("%w: --run %q is ambiguous: %d runs start with it (%s%s); give more of the id", cli.ErrUsage, prefix, len(runs), strings.Join(shown, ", "), more)
}

// tail follows the events of filter. A run prefix is resolved against the
// stored events first; one that matches no stored run is followed as a
// whole id (a run yet to start).
func tail(ctx context.Context, b *bus.Bus, filter bus.Filter, ff filterFlags, stdout, stderr io.Writer, print printer) error {
	if prefix := ff.runPrefix(); prefix != "" {
		runs, err := runsStartingWith(ctx, b, filter, prefix)
		if err != nil {
			return err
		}
		filter.Run = prefix
		if len(runs) > 0 {
			run, err := pick(prefix, runs)
			if err != nil {
				return err
			}
			filter.Run = run
		} else {
			fmt.Fprintf(stderr, "no stored run starts with %q: following the run with that id when it starts\n", prefix)
		}
	}
	err := b.Tail(ctx, filter, func(e *events.Event) error { return print(stdout, e) })
	if errors.Is(err, context.Canceled) && ctx.Err() != nil && context.Cause(ctx) == context.Canceled {
		return nil
	}
	return err
}
