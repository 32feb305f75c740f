package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/internal/cli"
)

// filterFlags are the event filters of replay and tail.
type filterFlags struct {
	agent, session, run, stage string
	since                      time.Duration
}

func (f *filterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.agent, "agent", "", "only this agent")
	fs.StringVar(&f.session, "session", "", "only this session")
	fs.StringVar(&f.run, "run", "", "only this run")
	fs.StringVar(&f.stage, "stage", "", "only this stage (e.g. tool.before)")
	fs.DurationVar(&f.since, "since", 0, "only events newer than this (e.g. 10m)")
}

// filter validates the flags into a bus.Filter; a bad id or stage is a usage
// error naming it.
func (f *filterFlags) filter() (bus.Filter, error) {
	var out bus.Filter
	for _, id := range []struct{ kind, v string }{{"agent", f.agent}, {"session", f.session}, {"run", f.run}} {
		if id.v == "" {
			continue
		}
		if err := events.ValidateID(id.kind, id.v); err != nil {
			return out, fmt.Errorf("%w: %v", cli.ErrUsage, err)
		}
	}
	out.Agent, out.Session, out.Run = f.agent, f.session, f.run
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

func cmdReplay(ctx context.Context, args []string, stdout, stderr io.Writer, live bool) error {
	name := "replay"
	if live {
		name = "tail"
	}
	fs := flag.NewFlagSet("observer "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	conn := cli.ConnFlags{DefaultURL: "nats://" + cli.DefaultListen}
	conn.Register(fs)
	var ff filterFlags
	ff.register(fs)
	asJSON := fs.Bool("json", false, "one CloudEvent (JSON format) per line")
	tree := false
	if !live {
		fs.BoolVar(&tree, "tree", false, "with --run: the run with the sub-agent runs it called nested under it")
	}
	verbose := fs.Bool("v", false, "log warnings and debug output on stderr")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	filter, err := ff.filter()
	if err != nil {
		return err
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	mode := cli.ReadOnly
	if !live {
		mode = cli.Offline // only where --store is given
	}
	c, err := conn.Open(ctx, "hookbus-observer", log, mode)
	if err != nil {
		return err
	}
	defer c.Close()
	print := cli.PrintTimeline
	if *asJSON {
		print = cli.PrintJSON
	}
	fn := func(e *events.Event) error { return print(stdout, e) }
	if live {
		err := c.Bus.Tail(ctx, filter, fn)
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
	if tree {
		if filter.Run == "" {
			return fmt.Errorf("%w: --tree needs --run", cli.ErrUsage)
		}
		root := filter.Run
		filter.Run, filter.Agent, filter.Session = "", "", "" // children run under other agents and sessions
		fn = treeFilter(root, func(e *events.Event, depth int) error {
			if *asJSON {
				return cli.PrintJSON(stdout, e)
			}
			fmt.Fprint(stdout, strings.Repeat("    ", depth))
			return cli.PrintTimeline(stdout, e)
		})
	}
	st, err := c.Bus.Replay(ctx, filter, fn)
	if err != nil {
		return err
	}
	// The summary goes to stderr in both formats: stdout stays one event a
	// line with --json.
	fmt.Fprintf(stderr, "%d events", st.Events)
	if st.Malformed > 0 {
		fmt.Fprintf(stderr, ", %d malformed messages skipped", st.Malformed)
	}
	if st.Unfetched > 0 {
		fmt.Fprintf(stderr, ", %d without their data (the object of their dataref is gone)", st.Unfetched)
	}
	fmt.Fprintln(stderr)
	return nil
}
