package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/internal/cli"
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
or a later interceptor modified it; such events are counted as not
reconstructible and not sent (docs/PROTOCOL.md, "Shadow backtests").
Progress goes to stderr every second.
`

// backtestRow is one event where the candidate decided differently.
type backtestRow struct {
	EventID    string    `json:"event_id"`
	Time       time.Time `json:"time"`
	Agent      string    `json:"agent"`
	Session    string    `json:"session"`
	Run        string    `json:"run"`
	Subject    string    `json:"subject,omitempty"`
	Recorded   string    `json:"recorded"`
	RecordedBy string    `json:"recorded_by,omitempty"`
	Candidate  string    `json:"candidate"`
	Reason     string    `json:"reason,omitempty"`
}

// backtestReport is what observer shadow prints.
type backtestReport struct {
	Stage              events.Stage  `json:"stage"`
	Plugin             string        `json:"plugin"`
	Scanned            int           `json:"scanned"`
	Sent               int           `json:"sent"`
	Differ             int           `json:"differ"`
	NotReconstructible int           `json:"not_reconstructible"`
	Failed             int           `json:"candidate_failures"`
	Rows               []backtestRow `json:"differences"`
}

func shadowCmd(a *cli.App) *cobra.Command {
	return cli.Command("shadow --stage S --plugin P [flags]", "Backtest a candidate interceptor on recorded traffic", shadowLong, func(fs *pflag.FlagSet) cli.Run {
		conn := cli.ConnFlags{App: a, StoreFallback: true}
		conn.Register(fs)
		var o shadowOptions
		fs.StringVar(&o.stage, "stage", "", "stage whose recorded events are sent (e.g. tool.before); required")
		fs.StringVar(&o.plugin, "plugin", "", "candidate plugin (a remote interceptor serving the stage); required")
		fs.StringVar(&o.agent, "agent", "", "only this agent's events")
		fs.StringVar(&o.session, "session", "", "only this session's events")
		fs.DurationVar(&o.since, "since", 0, "only events newer than this (e.g. 168h)")
		fs.DurationVar(&o.timeout, "timeout", interceptors.DefaultTimeout, "per-call timeout of the candidate")
		o.out.Register(fs, "the report, indented")
		return func(ctx context.Context, pos []string) error {
			if len(pos) > 0 {
				return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, pos[0])
			}
			return shadow(ctx, a, &conn, o)
		}
	})
}

// shadowOptions are the flags of observer shadow.
type shadowOptions struct {
	stage, plugin, agent, session string
	since, timeout                time.Duration
	out                           cli.Output
}

func shadow(ctx context.Context, a *cli.App, conn *cli.ConnFlags, o shadowOptions) error {
	stdout, stderr := a.Out, a.Err
	stageName, plugin, agent, session, since, timeout, asJSON := &o.stage, &o.plugin, &o.agent, &o.session, &o.since, &o.timeout, o.out.JSON()
	if *stageName == "" || *plugin == "" {
		return fmt.Errorf("%w: --stage and --plugin are required", cli.ErrUsage)
	}
	stage, err := events.ParseStage(*stageName)
	if err != nil {
		return fmt.Errorf("%w: --stage: %v", cli.ErrUsage, err)
	}
	reg := interceptors.Registration{Plugin: *plugin, Stage: stage, Timeout: *timeout, Uncapped: true}
	if err := reg.Validate(); err != nil {
		return fmt.Errorf("%w: %w", cli.ErrUsage, err)
	}
	if *since < 0 || *timeout <= 0 {
		return fmt.Errorf("%w: --since and --timeout must be positive", cli.ErrUsage)
	}
	f := bus.Filter{Agent: *agent, Session: *session, Stages: []events.Stage{stage, events.StageHookDecided, events.StageHookFailed}}
	if *since > 0 {
		f.Since = time.Now().Add(-*since)
	}
	c, err := conn.Open(ctx, "hookbus-observer", a.Log.Logger(stderr), cli.ReadOnly)
	if err != nil {
		return err
	}
	defer c.Close()
	gctx, stop := c.Guard(ctx)
	defer stop()
	rep, err := backtest(gctx, c.Bus, f, reg, stderr)
	if err != nil {
		return c.Explain(usageIfInvalid(err))
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return printBacktest(stdout, rep)
}

// backtest sends the recorded events of reg.Stage matching f to the
// candidate and compares.
func backtest(ctx context.Context, b *bus.Bus, f bus.Filter, reg interceptors.Registration, progress io.Writer) (*backtestReport, error) {
	chain := interceptors.NewChain(interceptors.WithTrust(interceptors.NewGrants(reg.Plugin)))
	if _, err := remote.Register(b, chain, reg); err != nil {
		return nil, err
	}
	rep := &backtestReport{Stage: reg.Stage, Plugin: reg.Plugin, Rows: []backtestRow{}}
	pending := map[string][]events.HookDecided{} // records of stage events not read yet, by event id
	last := time.Now()
	_, err := b.Replay(ctx, f, func(e *events.Event) error {
		if time.Since(last) >= time.Second {
			last = time.Now()
			fmt.Fprintf(progress, "observer shadow: %d %s events read, %d sent, %d differ\n", rep.Scanned, reg.Stage, rep.Sent, rep.Differ)
		}
		switch e.Stage {
		case events.StageHookDecided, events.StageHookFailed:
			if d, ok := recordOf(e); ok && d.Stage == reg.Stage {
				pending[d.EventID] = append(pending[d.EventID], d)
			}
			return nil
		case reg.Stage:
		default:
			return nil
		}
		rep.Scanned++
		recs := pending[e.ID]
		delete(pending, e.ID)
		recorded, by, ok := recordedFor(recs, reg.Plugin)
		if !ok {
			rep.NotReconstructible++
			return nil
		}
		out, err := chain.Run(ctx, e)
		if err != nil {
			return err
		}
		rep.Sent++
		cand, reason := candidateDecision(out)
		if strings.HasPrefix(cand, "failed:") {
			rep.Failed++
		}
		if cand != recorded {
			rep.Differ++
			rep.Rows = append(rep.Rows, backtestRow{
				EventID: e.ID, Time: e.Time, Agent: e.AgentID, Session: e.SessionID, Run: e.RunID, Subject: e.Subject,
				Recorded: recorded, RecordedBy: by, Candidate: cand, Reason: reason,
			})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// recordOf reads a hook.decided or hook.failed as a decision record (a
// failure as decision "failed:<kind>", deny when it failed closed); shadow
// records and those that do not decode are left out.
func recordOf(e *events.Event) (events.HookDecided, bool) {
	if e.Stage == events.StageHookDecided {
		var d events.HookDecided
		if e.DecodeData(&d) != nil || d.Shadow || d.EventID == "" {
			return d, false
		}
		return d, true
	}
	var f events.HookFailed
	if e.DecodeData(&f) != nil || f.EventID == "" || f.Outcome == interceptors.OutcomeShadow {
		return events.HookDecided{}, false
	}
	d := events.HookDecided{Plugin: f.Plugin, Stage: f.Stage, EventID: f.EventID, Decision: "failed:" + f.Kind, Reason: f.Error}
	if f.Outcome == interceptors.FailedClosed {
		d.Reason = "failed closed: " + f.Error
		d.Annotations = map[string]string{"closed": string(interceptors.Deny)}
	}
	return d, true
}

// recordedFor returns what was recorded for the candidate on an event whose
// chain left recs: its own decision when it was called, else the chain's
// outcome; and whether the stored event is what the candidate saw (no
// modify at or after its place in the chain).
func recordedFor(recs []events.HookDecided, plugin string) (decision, by string, ok bool) {
	at := len(recs)
	for i, r := range recs {
		if r.Plugin == plugin && r.Decision != string(interceptors.Skipped) {
			at = i
			break
		}
	}
	for _, r := range recs[min(at, len(recs)):] {
		if r.Decision == string(interceptors.Modify) {
			return "", "", false
		}
	}
	if at < len(recs) {
		return recs[at].Decision, plugin, true
	}
	for _, r := range recs {
		switch {
		case r.Annotations["closed"] != "":
			return string(interceptors.Deny), r.Plugin, true
		case r.Decision == string(interceptors.Deny), r.Decision == string(interceptors.Mock), r.Decision == string(interceptors.Stop),
			r.Decision == string(interceptors.Ask), r.Decision == string(interceptors.Continue):
			return r.Decision, r.Plugin, true
		}
	}
	return string(interceptors.Allow), "", true
}

// candidateDecision is what the candidate's one call decided.
func candidateDecision(out *interceptors.ChainResult) (decision, reason string) {
	if len(out.Records) == 0 {
		return string(interceptors.Allow), ""
	}
	r := out.Records[0]
	if r.Failure != nil {
		return "failed:" + r.Failure.Kind, r.Failure.Err.Error()
	}
	return string(r.Decision), r.Reason
}

func printBacktest(w io.Writer, rep *backtestReport) error {
	fmt.Fprintf(w, "%s on %s: %d events read, %d sent, %d differ, %d not reconstructible, %d candidate failures\n",
		rep.Plugin, rep.Stage, rep.Scanned, rep.Sent, rep.Differ, rep.NotReconstructible, rep.Failed)
	if len(rep.Rows) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tAGENT\tSESSION\tRUN\tEVENT\tSUBJECT\tRECORDED\tCANDIDATE\tREASON")
	for _, r := range rep.Rows {
		rec := r.Recorded
		if r.RecordedBy != "" {
			rec += " (" + r.RecordedBy + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Time.UTC().Format(time.RFC3339), r.Agent, r.Session, r.Run,
			r.EventID, r.Subject, rec, r.Candidate, r.Reason)
	}
	return tw.Flush()
}
