package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/events"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// showCmd prints one run as a tree.
func showCmd(a *cli.App) *cobra.Command {
	return cli.Command("show [flags] RUN", "Print one run as a tree: steps, tools, hooks' decisions, approvals, sub-agents", `Prints one run as a tree: its steps, model calls, tool calls and their results, every interceptor's decision (plugin, latency, what it changed: its patch as a diff of the payload), approvals, compactions, and the sub-agent runs it called, nested. RUN is a run id or a unique prefix of one (as runs and replay show them).`, func(fs *pflag.FlagSet) cli.Run {
		stdout, stderr := a.Out, a.Err
		var d deskFlags
		d.register(a, fs, "the run's tree as one JSON document (audit.RunTree)", cli.OutputText, cli.OutputJSON)
		return func(ctx context.Context, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("%w: want one RUN (an id or a prefix of one), got %d arguments", cli.ErrUsage, len(args))
			}
			show, run, err := d.findRun(ctx, stderr, args[0])
			if err != nil {
				return err
			}
			tree, err := show.Tree(run)
			if err != nil {
				return err
			}
			if d.out.JSON() {
				return writeJSON(stdout, tree)
			}
			printTree(stdout, tree, "")
			return nil
		}
	})
}

// printTree writes t, each line prefixed by ind.
func printTree(w io.Writer, t *audit.RunTree, ind string) {
	r := t.Run
	fmt.Fprintf(w, "%srun %s  %s/%s  %s, %d steps, %s tokens, %s", ind, r.RunID, r.AgentID, r.SessionID, r.Status, r.Steps, tokens(r.Usage), duration(r.Duration()))
	if r.Attempts > 1 {
		fmt.Fprintf(w, ", %d attempts", r.Attempts)
	}
	fmt.Fprintln(w)
	if r.Parent != nil {
		fmt.Fprintf(w, "%s  called by run %s (%s/%s)\n", ind, r.Parent.RunID, r.Parent.AgentID, r.Parent.SessionID)
	}
	if r.Detail != "" {
		fmt.Fprintf(w, "%s  why: %s\n", ind, r.Detail)
	}
	for _, it := range t.Items {
		printItem(w, it, ind+"  ")
	}
	for _, c := range t.Children {
		printTree(w, c, ind+"    ")
	}
}

// printItem writes an item, its hooks, its nested items and child run.
func printItem(w io.Writer, it *audit.Item, ind string) {
	fmt.Fprintf(w, "%s#%03d %s\n", ind, it.Seq, it.Text)
	for _, h := range it.Hooks {
		printHook(w, h, ind+"     ")
	}
	for _, sub := range it.Items {
		printItem(w, sub, ind+"  ")
	}
	if it.Child != nil {
		printTree(w, it.Child, ind+"     ")
	}
}

// decided is a hook call's decision, with its failure when it failed and
// its reason when it gave one.
func decided(h *audit.HookCall) string {
	s := h.Decision
	if f := h.Failure; f != nil {
		s += fmt.Sprintf(" (%s, policy %s: %s): %s", f.Kind, f.Policy, f.Outcome, f.Error)
	}
	if h.Reason != "" {
		s += " " + events.Quote(h.Reason, 0)
	}
	return s
}

// printHook writes one interceptor's decision and what it changed.
func printHook(w io.Writer, h *audit.HookCall, ind string) {
	s := fmt.Sprintf("%s▸ %s on %s: %s", ind, h.Plugin, h.Stage, decided(h))
	if h.Result != nil {
		s += " → result " + events.Quote(h.Result.Content, 0)
	}
	s += " (" + micros(h.LatencyUS)
	if h.Remote {
		s += ", remote"
	}
	s += ")"
	fmt.Fprintln(w, s)
	for _, k := range slices.Sorted(maps.Keys(h.Annotations)) {
		fmt.Fprintf(w, "%s    %s: %s\n", ind, k, h.Annotations[k])
	}
	for _, warn := range h.Warnings {
		fmt.Fprintf(w, "%s    warning: %s\n", ind, warn)
	}
	for _, c := range h.Changes {
		before := "(not recorded)"
		if c.BeforeKnown {
			before = "(absent)"
			if c.Before != nil {
				before = audit.Short(c.Before, 100)
			}
		}
		switch c.Op {
		case "remove":
			fmt.Fprintf(w, "%s    - %s: %s\n", ind, c.Path, before)
		case "move", "copy":
			fmt.Fprintf(w, "%s    ~ %s %s → %s\n", ind, c.Op, c.From, c.Path)
		default:
			if !c.BeforeKnown || c.Before != nil || c.Op == "replace" {
				fmt.Fprintf(w, "%s    - %s: %s\n", ind, c.Path, before)
			}
			fmt.Fprintf(w, "%s    + %s: %s\n", ind, c.Path, audit.Short(c.After, 100))
		}
	}
}
