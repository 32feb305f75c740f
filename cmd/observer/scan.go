package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"text/tabwriter"
	"time"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/events"
	"github.com/spf13/pflag"
)

// deskFlags are the flags the auditor's commands (sessions, runs, show,
// stats, verify) share: the connection and --output (--json).
type deskFlags struct {
	app  *cli.App
	conn cli.ConnFlags
	out  cli.Output
}

// register defines the flags on fs; formats are --output's (default:
// table, json).
func (d *deskFlags) register(a *cli.App, fs *pflag.FlagSet, jsonHelp string, formats ...string) {
	d.app = a
	d.conn.App = a
	d.conn.StoreFallback = true
	d.conn.Register(fs)
	d.out.Register(fs, jsonHelp, formats...)
}

// logger is the command's logger.
func (d *deskFlags) logger(stderr io.Writer) *slog.Logger { return d.app.Log.Logger(stderr) }

// since validates --since into a time (zero for none).
func since(d time.Duration) (time.Time, error) {
	switch {
	case d < 0:
		return time.Time{}, fmt.Errorf("%w: --since %s is negative", cli.ErrUsage, d)
	case d == 0:
		return time.Time{}, nil
	}
	return time.Now().Add(-d), nil
}

// validID checks an id flag; a bad one is a usage error.
func validID(kind, v string) error {
	if v == "" {
		return nil
	}
	if err := events.ValidateID(kind, v); err != nil {
		return fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	return nil
}

// scan opens the bus and replays filter's events into fold, showing its
// progress on stderr: a line that updates itself ("scanned N/M events")
// when stderr is a terminal, and the final count in any case.
func (d *deskFlags) scan(ctx context.Context, filter bus.Filter, stderr io.Writer, fold func(*events.Event)) error {
	return d.scanThen(ctx, filter, stderr, fold, nil)
}

// scanThen is scan, then calls then (when not nil) on the same connection.
func (d *deskFlags) scanThen(ctx context.Context, filter bus.Filter, stderr io.Writer, fold func(*events.Event), then func(context.Context, *cli.Conn) error) error {
	c, gctx, release, err := d.conn.OpenGuarded(ctx, "hookbus-observer", d.logger(stderr), cli.ReadOnly)
	if err != nil {
		return err
	}
	defer release()
	p := &progress{w: stderr, live: isTerminal(os.Stderr), last: lastSeq(gctx, c.Bus)}
	st, err := c.Bus.Replay(gctx, filter, func(e *events.Event) error {
		fold(e)
		p.saw(e.Stored)
		return nil
	})
	if err != nil {
		return c.Explain(err)
	}
	p.done(st)
	if then != nil {
		return c.Explain(then(gctx, c))
	}
	return nil
}

// runArg is the run id, or the prefix of one, that a RUN argument names
// (as runs and replay show it, ellipsis and all). A bad arg is a usage
// error.
func runArg(arg string) (string, error) {
	prefix := (&filterFlags{run: arg}).runPrefix()
	if prefix == "" {
		return "", fmt.Errorf("%w: RUN %q holds no run id", cli.ErrUsage, arg)
	}
	return prefix, validID("run", prefix)
}

// findRun reads the events of the run arg names (an id or a unique
// prefix of one, as runs and replay show them) into a Show, and returns it
// with the run's id. A bad arg is a usage error.
func (d *deskFlags) findRun(ctx context.Context, stderr io.Writer, arg string) (*audit.Show, string, error) {
	prefix, err := runArg(arg)
	if err != nil {
		return nil, "", err
	}
	show := audit.NewShow(prefix)
	if err := d.scan(ctx, bus.Filter{}, stderr, show.Add); err != nil {
		return nil, "", err
	}
	run, err := pick(prefix, show.Runs())
	return show, run, err
}

// writeJSON writes v as one indented JSON document.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeJSONLines writes each value of list as one line of JSON.
func writeJSONLines[T any](w io.Writer, list []T) error {
	enc := json.NewEncoder(w)
	for _, v := range list {
		if err := enc.Encode(v); err != nil {
			return err
		}
	}
	return nil
}

// writeList writes list as JSON, one value a line (asJSON), or else as a
// table by printTable; an empty table is none, said on stderr.
func writeList[T any](stdout, stderr io.Writer, asJSON bool, list []T, none string, printTable func(io.Writer, []T) error) error {
	switch {
	case asJSON:
		return writeJSONLines(stdout, list)
	case len(list) == 0:
		fmt.Fprintln(stderr, none)
		return nil
	}
	return printTable(stdout, list)
}

// lastSeq is the events stream's last sequence, 0 when it cannot be read.
func lastSeq(ctx context.Context, b *bus.Bus) uint64 {
	s, err := b.JetStream().Stream(ctx, b.Names().Events)
	if err != nil {
		return 0
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0
	}
	return info.State.LastSeq
}

// isTerminal reports whether f is a terminal (a character device).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progress reports a long scan on w: with live, a line rewritten in place
// at most every progressEvery; always, a final count.
type progress struct {
	w     io.Writer
	live  bool
	last  uint64 // the stream's last sequence (0: unknown)
	n     int    // events read
	at    uint64 // the stream sequence reached
	shown time.Time
	drawn bool
}

const progressEvery = 200 * time.Millisecond

func (p *progress) saw(seq uint64) {
	p.n++
	p.at = max(p.at, seq)
	if !p.live || p.n%1024 != 0 || time.Since(p.shown) < progressEvery {
		return
	}
	p.shown = time.Now()
	p.drawn = true
	if p.last > 0 {
		fmt.Fprintf(p.w, "\rscanned %d/%d events (%d%%)", p.at, p.last, p.at*100/p.last)
	} else {
		fmt.Fprintf(p.w, "\rscanned %d events", p.at)
	}
}

func (p *progress) done(st bus.ReplayStats) {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintf(p.w, "%d events read", st.Events)
	if p.last > 0 {
		fmt.Fprintf(p.w, " (the stream holds %d)", p.last)
	}
	if st.Malformed > 0 {
		fmt.Fprintf(p.w, ", %d malformed messages skipped", st.Malformed)
	}
	if st.Unfetched > 0 {
		fmt.Fprintf(p.w, ", %d without their data (the object of their dataref is gone)", st.Unfetched)
	}
	fmt.Fprintln(p.w)
}

// newTable writes a table's columns, two spaces apart; the rows end in
// its Flush.
func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// table is newTable with its header line written.
func table(w io.Writer, header string) *tabwriter.Writer {
	tw := newTable(w)
	fmt.Fprintln(tw, header)
	return tw
}

// shortRun is a run id as the timeline shows it: a prefix that replay
// --run and show accept.
func shortRun(id string) string {
	if len(id) > cli.RunIDShown+1 {
		return id[:cli.RunIDShown] + "…"
	}
	return id
}

// calledBy is the CALLED BY column: the run that started this one, "-"
// for none.
func calledBy(p *audit.RunRef) string {
	if p == nil {
		return "-"
	}
	return "run " + shortRun(p.RunID)
}

// when formats a time for the tables.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05.000")
}

// tokens is "in+out" and the cost when known.
func tokens(u events.Usage) string {
	s := fmt.Sprintf("%d+%d", u.InputTokens, u.OutputTokens)
	if u.CostUSD > 0 {
		s += fmt.Sprintf(" $%.4f", u.CostUSD)
	}
	return s
}

// micros formats a latency in microseconds.
func micros(us int64) string {
	if us < 1000 {
		return fmt.Sprintf("%dµs", us)
	}
	return (time.Duration(us) * time.Microsecond).Round(10 * time.Microsecond).String()
}

// duration formats a run's duration to about three digits.
func duration(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// scopeFlags are --agent and --since: the records of which agent, stored
// in which last while.
type scopeFlags struct {
	agent string
	since time.Duration
}

func (s *scopeFlags) register(fs *pflag.FlagSet, agentHelp string) {
	fs.StringVar(&s.agent, "agent", "", agentHelp)
	fs.DurationVar(&s.since, "since", 0, "only events stored in this last while (e.g. 24h)")
}

// filter checks the flags and returns the filter they select.
func (s *scopeFlags) filter() (bus.Filter, error) {
	if err := validID("agent", s.agent); err != nil {
		return bus.Filter{}, err
	}
	from, err := since(s.since)
	if err != nil {
		return bus.Filter{}, err
	}
	return bus.Filter{Agent: s.agent, Since: from}, nil
}
