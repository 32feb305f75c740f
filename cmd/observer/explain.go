package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/events"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

const explainLong = `Shows, for each call of run RUN (a run id or a unique prefix of one), or for
the one call CALL (a tool call's id, or the id of the event decided on),
which interceptors and policies matched it, in the order the chain called
them, and what each decided: its decision and reason, its latency, whether
it was called over NATS (remote) or in the process, whether it was a shadow
(recorded, not applied: a shadow registration, a policy in audit mode or
outside its rollout), and how it failed. For a policy's rule it shows the
policy's name, version, the rule, its mode, the CEL expression and the values
it saw (docs/POLICIES.md, "Explain"). Each call ends with what the chain
decided. A call nothing matched says so.`

// explainView is observer explain's JSON output.
type explainView struct {
	Run     string                 `json:"run"`
	Agent   string                 `json:"agent"`
	Session string                 `json:"session"`
	Calls   []*audit.ExplainedCall `json:"calls"`
}

// explainCmd explains one run's decisions.
func explainCmd(a *cli.App) *cobra.Command {
	return cli.Command("explain [flags] RUN [CALL]", "Show which interceptors and policies decided each call of a run, and why", explainLong, func(fs *pflag.FlagSet) cli.Run {
		stdout, stderr := a.Out, a.Err
		var d deskFlags
		d.register(a, fs, "the run's calls as one JSON document", cli.OutputText, cli.OutputJSON)
		return func(ctx context.Context, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return fmt.Errorf("%w: want RUN (an id or a prefix of one) and at most one CALL, got %d arguments", cli.ErrUsage, len(args))
			}
			show, run, err := d.findRun(ctx, stderr, args[0])
			if err != nil {
				return err
			}
			x := audit.NewExplain(run)
			v := explainView{Run: run}
			for _, e := range show.Events(run) {
				if e.RunID == run && v.Agent == "" {
					v.Agent, v.Session = e.AgentID, e.SessionID
				}
				x.Add(e)
			}
			v.Calls = x.Calls()
			if len(args) == 2 {
				if v.Calls = x.Call(args[1]); len(v.Calls) == 0 {
					return fmt.Errorf("run %s holds no call or event %q (observer explain %s lists its calls)", run, args[1], run)
				}
			}
			if d.out.JSON() {
				return writeJSON(stdout, v)
			}
			printExplain(stdout, &v)
			return nil
		}
	})
}

// printExplain writes the calls of v as text.
func printExplain(w io.Writer, v *explainView) {
	fmt.Fprintf(w, "run %s  %s/%s: %s\n", v.Run, v.Agent, v.Session, calls(len(v.Calls)))
	for _, c := range v.Calls {
		fmt.Fprintln(w)
		head := fmt.Sprintf("%s #%03d", c.Stage, c.Seq)
		if c.Step > 0 {
			head = fmt.Sprintf("step %d  %s", c.Step, head)
		}
		if c.Subject != "" {
			head += "  " + c.Subject
		}
		if c.CallID != "" {
			head += " (call " + c.CallID + ")"
		}
		if a := c.Action; a != nil {
			head += "  " + actionText(a)
		}
		if !c.Recorded {
			head += "  [event not recorded: refused before it was stored]"
		}
		fmt.Fprintln(w, head)
		if len(c.Hooks) == 0 {
			fmt.Fprintln(w, "  no interceptor or policy matched")
		}
		for i, h := range c.Hooks {
			printExplainedHook(w, i+1, h)
		}
		out := "  => " + c.Outcome
		if c.By != "" {
			out += " (" + c.By + ")"
		}
		fmt.Fprintln(w, out)
	}
}

// actionText is a normalized action in a few words.
func actionText(a *events.Action) string {
	s := string(a.Kind)
	switch {
	case a.Command != "":
		s += " " + events.Quote(a.Command, 80)
	case a.URL != "":
		s += " " + a.URL
	case len(a.Paths) > 0:
		s += " " + strings.Join(a.Paths, " ")
	case a.Server != "":
		s += " " + a.Server + "/" + a.MCPTool
	}
	return s
}

// printExplainedHook writes the n-th record on a call.
func printExplainedHook(w io.Writer, n int, h *audit.HookCall) {
	where := "in-process"
	if h.Remote {
		where = "remote"
	}
	s := fmt.Sprintf("  %d. %s  %s", n, h.Plugin, decided(h))
	s += "  (" + micros(h.LatencyUS) + ", " + where
	if h.Shadow {
		s += ", shadow: not applied"
	}
	fmt.Fprintln(w, s+")")
	if p := h.Policy; p != nil {
		enforced := "enforced"
		if !p.Enforced {
			enforced = "not enforced"
		}
		fmt.Fprintf(w, "       policy %s %s  rule %s  mode %s (%s)  %s\n", p.Name, p.Version, p.Rule, p.Mode, enforced, p.Action)
		if p.Expression != "" {
			fmt.Fprintf(w, "       expression: %s\n", p.Expression)
		}
		if p.Message != "" {
			fmt.Fprintf(w, "       message: %s\n", events.Quote(p.Message, 0))
		}
		for _, k := range slices.Sorted(maps.Keys(p.Values)) {
			fmt.Fprintf(w, "       %s = %s\n", k, p.Values[k])
		}
	}
	for _, warn := range h.Warnings {
		fmt.Fprintf(w, "       warning: %s\n", warn)
	}
}
