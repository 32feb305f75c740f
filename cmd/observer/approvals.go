package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/record/approval"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// readApprovals folds the approvals recorded under f.
func readApprovals(ctx context.Context, b *bus.Bus, f bus.Filter) (*audit.Approvals, error) {
	f.Stages = audit.ApprovalStages
	var as audit.Approvals
	if _, err := b.Replay(ctx, f, func(e *events.Event) error { as.Add(e); return nil }); err != nil {
		return nil, err
	}
	return &as, nil
}

// approvalRun resolves RUN, a run id or a unique prefix of one (as runs,
// show and the web page show them), among the runs that asked for
// approval.
func approvalRun(as *audit.Approvals, arg string) (string, error) {
	prefix, err := runArg(arg)
	if err != nil {
		return "", err
	}
	var runs []string
	for _, a := range as.All() {
		if strings.HasPrefix(a.RunID, prefix) && !slices.Contains(runs, a.RunID) {
			runs = append(runs, a.RunID)
		}
	}
	if len(runs) == 0 {
		return "", fmt.Errorf("no run whose id is or starts with %s has asked for approval (no approval.requested recorded)", prefix)
	}
	run, err := pick(prefix, runs)
	if err != nil && errors.Is(err, cli.ErrUsage) {
		return "", fmt.Errorf("%w: RUN %q is ambiguous: %d runs that asked for approval start with it; give more of the id", cli.ErrUsage, prefix, len(runs))
	}
	return run, err
}

// approvalsCmd lists the tool calls waiting for a human.
func approvalsCmd(a *cli.App) *cobra.Command {
	return cli.Command("approvals [flags] [RUN]", "List the tool calls waiting for a human's approval",
		`Lists the tool calls waiting for a human's approval (answer with observer approve|reject); with RUN (a run id or a unique prefix of one), that run's only.`,
		func(fs *pflag.FlagSet) cli.Run {
			conn := cli.ConnFlags{App: a, StoreFallback: true}
			conn.Register(fs)
			agent := fs.String("agent", "", "only this agent's")
			all := fs.Bool("all", false, "answered ones too")
			var out cli.Output
			out.Register(fs, "one JSON object a call per line (audit.Approval)")
			return func(ctx context.Context, pos []string) error {
				return approvals(ctx, a, &conn, pos, *agent, *all, out.JSON())
			}
		})
}

func approvals(ctx context.Context, a *cli.App, conn *cli.ConnFlags, pos []string, agent string, all, asJSON bool) error {
	stdout, stderr := a.Out, a.Err
	if len(pos) > 1 {
		return fmt.Errorf("%w: want at most one RUN, got %d arguments", cli.ErrUsage, len(pos))
	}
	if err := validID("agent", agent); err != nil {
		return err
	}
	c, err := conn.Open(ctx, "hookbus-observer", a.Log.Logger(stderr), cli.ReadOnly)
	if err != nil {
		return err
	}
	defer c.Close()
	as, err := readApprovals(ctx, c.Bus, bus.Filter{Agent: agent})
	if err != nil {
		return err
	}
	list := as.Pending()
	if all {
		list = as.All()
	}
	if len(pos) == 1 {
		run, err := approvalRun(as, pos[0])
		if err != nil {
			return err
		}
		list = slices.DeleteFunc(list, func(a *audit.Approval) bool { return a.RunID != run })
	}
	return writeList(stdout, stderr, asJSON, list, "no approvals waiting", printApprovals)
}

// printApprovals writes the approvals as a table.
func printApprovals(w io.Writer, list []*audit.Approval) error {
	tw := table(w, "RUN\tAGENT/SESSION\tCALL\tTOOL\tASKED BY\tREASON\tEXPIRES\tSTATE")
	for _, a := range list {
		by := cmp.Or(a.Requested.Plugin, "policy")
		state := "waiting"
		switch {
		case a.Resolved != nil:
			state = a.Resolved.Describe()
			if a.IdentityProblem != "" {
				state += " [IDENTITY NOT BOUND: " + a.IdentityProblem + "]"
			}
		case a.RunEnded:
			state = "run ended"
		}
		fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%s%s\t%s\t%s\t%s\t%s\n", a.RunID, a.AgentID, a.SessionID, a.Requested.Call.ID,
			a.Requested.Call.Name, compactArgs(a.Requested.Call.Arguments), by, a.Requested.Reason,
			a.Requested.ExpiresAt.Local().Format(time.DateTime), state)
	}
	return tw.Flush()
}

func compactArgs(b []byte) string {
	s := string(b)
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// answerCmd answers a run's waiting calls: approve, or reject (with
// --continue, reject and continue). The answer is recorded at once, in
// the run's record, by this command (approval.Answer): the first
// answer to a call wins, and a later one is refused naming it.
func answerCmd(a *cli.App, verb string) *cobra.Command {
	use, short := "approve [flags] RUN", "Approve a run's tool calls waiting for a human"
	if verb == "reject" {
		use, short = "reject [flags] RUN --reason TEXT", "Reject a run's tool calls waiting for a human"
	}
	return cli.Command(use, short, `Answers a run's tool calls waiting for approval. RUN is a run id or a unique prefix of one. The answer is recorded at once in the run's record (approval.resolved, on this connection's NATS user's subject): the first answer to a call wins, a later one is refused naming it. A worker (loop serve) then resumes the run, now or when one starts; a coding agent's permission request is answered to its waiting hook instead.`,
		func(fs *pflag.FlagSet) cli.Run {
			o := answerOptions{verb: verb, conn: cli.ConnFlags{App: a}}
			o.conn.Register(fs)
			fs.StringVar(&o.call, "call", "", "the call to answer (default: every call of the run waiting)")
			fs.StringVar(&o.note, "note", "", "a name to record with the answer, as a note: who answers is the NATS user of the connection, as the server authenticated it")
			fs.StringVar(&o.note, "by", "", "the same as --note (kept for scripts: recorded as a note, declared_by, never as who answered)")
			fs.StringVar(&o.comment, "comment", "", "a comment, recorded with the answer")
			fs.StringVar(&o.reason, "reason", "", "why (required to reject; with --continue the model is given it)")
			fs.BoolVar(&o.cont, "continue", false, "reject and continue: the model is told the call was rejected, and the run goes on")
			fs.StringVar(&o.arguments, "arguments", "", "approve with these arguments (a JSON object) instead of those asked for; needs --call")
			fs.DurationVar(&o.wait, "wait", approval.DefaultSettle, "how long to wait for a run still running its step's other calls")
			return func(ctx context.Context, pos []string) error { return o.answer(ctx, a, pos) }
		})
}

// answerOptions are the flags of observer approve and reject.
type answerOptions struct {
	verb                        string
	conn                        cli.ConnFlags
	call, note, comment, reason string
	arguments                   string
	cont                        bool
	wait                        time.Duration
}

func (o *answerOptions) answer(ctx context.Context, a *cli.App, pos []string) error {
	stdout, stderr := a.Out, a.Err
	if len(pos) != 1 {
		return fmt.Errorf("%w: want one RUN id (or a unique prefix of one), got %d arguments", cli.ErrUsage, len(pos))
	}
	action := events.ActionApprove
	if o.verb == "reject" {
		action = events.ActionReject
		if o.cont {
			action = events.ActionRejectAndContinue
		}
		if o.reason == "" {
			return fmt.Errorf("%w: reject needs --reason", cli.ErrUsage)
		}
	} else if o.cont {
		return fmt.Errorf("%w: --continue is for reject", cli.ErrUsage)
	}
	if o.arguments != "" && (o.verb != "approve" || o.call == "") {
		return fmt.Errorf("%w: --arguments goes with approve and --call", cli.ErrUsage)
	}
	if o.wait < 0 {
		return fmt.Errorf("%w: --wait %s is negative", cli.ErrUsage, o.wait)
	}
	if o.call != "" {
		if err := events.ValidateID("call", o.call); err != nil {
			return fmt.Errorf("%w: --call: %v", cli.ErrUsage, err)
		}
	}
	c, gctx, release, err := o.conn.OpenGuarded(ctx, "hookbus-approver", a.Log.Logger(stderr), cli.ReadOnly)
	if err != nil {
		return err
	}
	defer release()
	as, err := readApprovals(gctx, c.Bus, bus.Filter{})
	if err != nil {
		return c.Explain(err)
	}
	run, err := approvalRun(as, pos[0])
	if err != nil {
		return err
	}
	mine := as.Of(run)
	if o.call != "" && !slices.ContainsFunc(mine, func(a *audit.Approval) bool { return a.Requested.Call.ID == o.call }) {
		return fmt.Errorf("run %s has no call %s waiting for approval", run, o.call)
	}
	me, err := c.Bus.WhoAmI(gctx)
	if err != nil {
		return c.Explain(err)
	}
	req := approval.Request{
		AgentID: mine[0].AgentID, SessionID: mine[0].SessionID, RunID: run, CallID: o.call,
		Action: action, Reason: o.reason, Comment: o.comment,
		By: events.Actor{Identity: me.User, Via: me.Via, Writer: me.User, Channel: events.ChannelCLI, DeclaredBy: o.note},
	}
	if o.arguments != "" {
		req.Arguments = json.RawMessage(o.arguments)
	}
	res, err := approval.Answer(gctx, approval.Deps{History: c.Bus, Recorder: c.Bus, Source: "hookbus/observer", Settle: o.wait}, req)
	if res != nil {
		for _, r := range res.Resolved {
			fmt.Fprintf(stdout, "%s call %s of run %s: recorded, by %s\n", action, r.CallID, run, r.Actor)
		}
	}
	if err != nil {
		return c.Explain(err)
	}
	if len(res.Waiting) > 0 {
		var ids []string
		for _, w := range res.Waiting {
			ids = append(ids, w.Call.ID)
		}
		fmt.Fprintf(stdout, "run %s still waits for an answer to %s\n", run, strings.Join(ids, ", "))
		return nil
	}
	if bridged(mine[0]) {
		fmt.Fprintf(stdout, "run %s: answered; the coding agent that asked (%s) has the answer if its hook still waits for it, otherwise it asked its own user\n", run, mine[0].AgentID)
		return nil
	}
	fmt.Fprintf(stdout, "run %s: every call of its step is answered; a worker (loop serve) resumes it, now or when one starts\n", run)
	return nil
}

// bridged reports whether a is a coding agent's permission request (the
// bridge recorded it): its answer goes to the agent's waiting hook, no
// worker resumes anything.
func bridged(a *audit.Approval) bool {
	return strings.HasPrefix(a.Source, "hookbus/") && a.Source != engineSource
}

// engineSource is the source of the engine's events (loop.DefaultSource).
const engineSource = "hookbus/loop"
