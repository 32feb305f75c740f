package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"text/tabwriter"
	"time"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/internal/cli"
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

// cmdApprovals lists the tool calls waiting for a human.
func cmdApprovals(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("observer approvals", flag.ContinueOnError)
	fs.SetOutput(stderr)
	conn := cli.ConnFlags{StoreFallback: true}
	conn.Register(fs)
	agent := fs.String("agent", "", "only this agent's")
	all := fs.Bool("all", false, "answered ones too")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: observer approvals [flags]\n\nLists the tool calls waiting for a human's approval (answer with observer approve|reject).\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	if *agent != "" {
		if err := events.ValidateID("agent", *agent); err != nil {
			return fmt.Errorf("%w: %v", cli.ErrUsage, err)
		}
	}
	c, err := conn.Open(ctx, "hookbus-observer", slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError})), cli.ReadOnly)
	if err != nil {
		return err
	}
	defer c.Close()
	as, err := readApprovals(ctx, c.Bus, bus.Filter{Agent: *agent})
	if err != nil {
		return err
	}
	list := as.Pending()
	if *all {
		list = as.All()
	}
	if len(list) == 0 {
		fmt.Fprintln(stderr, "no approvals waiting")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tAGENT/SESSION\tCALL\tTOOL\tASKED BY\tREASON\tEXPIRES\tSTATE")
	for _, a := range list {
		by := a.Requested.Plugin
		if by == "" {
			by = "policy"
		}
		state := "waiting"
		switch {
		case a.Resolved != nil:
			state = a.Resolved.Action + " by " + a.Resolved.By
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

// cmdAnswer answers a run's waiting calls: approve, or reject (with
// --continue, reject and continue).
func cmdAnswer(ctx context.Context, verb string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("observer "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	conn := cli.ConnFlags{}
	conn.Register(fs)
	call := fs.String("call", "", "the call to answer (default: every call of the run waiting)")
	by := fs.String("by", os.Getenv("USER"), "who answers (recorded)")
	comment := fs.String("comment", "", "a note, recorded with the answer")
	reason := fs.String("reason", "", "why (required to reject; with --continue the model is given it)")
	cont := fs.Bool("continue", false, "reject and continue: the model is told the call was rejected, and the run goes on")
	wait := fs.Duration("wait", 10*time.Second, "how long to wait for a worker to record the answer")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: observer %s [flags] RUN\n\nAnswers a run's tool calls waiting for approval. The answer is queued on hookbus.approval.<agent>; a worker (loop serve) records it and resumes the run.\n\nFlags:\n", verb)
		fs.PrintDefaults()
	}
	pos, err := cli.ParseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: want one RUN id, got %d arguments", cli.ErrUsage, len(pos))
	}
	run := pos[0]
	if err := events.ValidateID("run", run); err != nil {
		return fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	action := events.ActionApprove
	if verb == "reject" {
		action = events.ActionReject
		if *cont {
			action = events.ActionRejectAndContinue
		}
		if *reason == "" {
			return fmt.Errorf("%w: reject needs --reason", cli.ErrUsage)
		}
	} else if *cont {
		return fmt.Errorf("%w: --continue is for reject", cli.ErrUsage)
	}
	if *wait < 0 {
		return fmt.Errorf("%w: --wait %s is negative", cli.ErrUsage, *wait)
	}
	c, err := conn.Open(ctx, "hookbus-approver", slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError})), cli.ReadOnly)
	if err != nil {
		return err
	}
	defer c.Close()
	as, err := readApprovals(ctx, c.Bus, bus.Filter{Run: run})
	if err != nil {
		return err
	}
	mine := as.Of(run)
	if len(mine) == 0 {
		return fmt.Errorf("run %s has asked for no approval (no approval.requested recorded)", run)
	}
	var targets []*audit.Approval
	for _, a := range mine {
		if *call != "" && a.Requested.Call.ID != *call {
			continue
		}
		switch {
		case a.RunEnded:
			return fmt.Errorf("run %s has ended: it waits for no answer", run)
		case a.Resolved != nil && *call != "":
			return fmt.Errorf("call %s of run %s was answered already: %s by %s", *call, run, a.Resolved.Action, a.Resolved.By)
		case a.Resolved == nil:
			targets = append(targets, a)
		}
	}
	if len(targets) == 0 {
		if *call != "" {
			return fmt.Errorf("run %s has no call %s waiting for approval", run, *call)
		}
		return fmt.Errorf("run %s has no call waiting for approval", run)
	}
	sent := map[string]string{} // call id → answer id
	for _, a := range targets {
		ans := events.ApprovalAnswer{CallID: a.Requested.Call.ID, Action: action, By: *by, Reason: *reason,
			Comment: *comment, AnswerID: events.NewID(), AnsweredAt: time.Now().UTC()}
		if err := c.Bus.SubmitAnswer(ctx, a.AgentID, a.SessionID, run, ans); err != nil {
			return err
		}
		sent[ans.CallID] = ans.AnswerID
	}
	// A worker records each answer as approval.resolved: wait for it.
	deadline := time.Now().Add(*wait)
	for {
		as, err := readApprovals(ctx, c.Bus, bus.Filter{Run: run})
		if err != nil {
			return err
		}
		done := 0
		for _, a := range as.Of(run) {
			id, ok := sent[a.Requested.Call.ID]
			if !ok || a.Resolved == nil {
				continue
			}
			done++
			if a.Resolved.AnswerID != id {
				return fmt.Errorf("call %s of run %s was answered by %s first (%s); this answer was refused", a.Requested.Call.ID, run, a.Resolved.By, a.Resolved.Action)
			}
		}
		if done == len(sent) {
			for callID := range sent {
				fmt.Fprintf(stdout, "%s call %s of run %s: recorded\n", action, callID, run)
			}
			return nil
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(stdout, "%s queued for %d call(s) of run %s; no worker recorded it within %s: a worker (loop serve) will when it runs\n", action, len(sent), run, *wait)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
