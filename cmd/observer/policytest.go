package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/hookbus/hookbus/audit/policytest"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/policies"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/events"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// exitFlips is observer policy test's exit code, with --fail-on-flips,
// when a policy would change any call.
const exitFlips = 3

const policyTestLong = `Replays the recorded tool calls of every harness (hookbus' own runs and the
coding agents' bridged sessions) through the policies of FILE ("-": stdin), as
each policy saw them, and prints what would change: the calls each policy
would newly deny, newly allow (where its own recorded decision, an earlier
version enforced, said otherwise), rewrite, or send to a person, per agent and
harness, with their runs and calls. Nothing is applied and no run is touched.

Each policy is tested as if enforced in every session, on the calls its match
selects (stages, agents, harnesses, kinds, tools, match conditions); each flip
says whether the policy as written (its mode and rollout) would enforce it or
only record it. Session rules see the calls of the session before each one,
as the record holds them. A call is compared with what the record holds: the
policy's own decision when it was enforced already, else the chain's outcome
(docs/POLICIES.md, "Test against history").

The result is stored for the web page's policies view (the last test of each
policy; needs the right to write the trust bucket, else a warning says it was
not stored). Progress goes to stderr every second. Exits 0, or with
--fail-on-flips 3 when any call would change (for CI).`

// policyTestCmd tests a policy file against the record.
func policyTestCmd(a *cli.App) *cobra.Command {
	return cli.Command("test -f FILE [flags]", "Replay recorded calls through a policy file and print what would change", policyTestLong, func(fs *pflag.FlagSet) cli.Run {
		conn := cli.ConnFlags{App: a, StoreFallback: true}
		conn.Register(fs)
		var o policyTestOptions
		fs.StringVarP(&o.file, "file", "f", "", "the policy file (YAML, one or more documents; - for stdin); required")
		o.since = 7 * 24 * time.Hour
		fs.Var((*ageFlag)(&o.since), "since", "only calls newer than this (7d, 24h, 90m); 0: all the record holds")
		fs.StringVar(&o.agent, "agent", "", "only the calls of agents matching this glob (e.g. \"ci-*\")")
		fs.StringVar(&o.harness, "harness", "", "only the calls of this harness: hookbus, claude, gemini, codex, copilot, qwen, factory, cline, opencode or kilo (a glob)")
		fs.BoolVar(&o.failOnFlips, "fail-on-flips", false, fmt.Sprintf("exit %d when any call would change", exitFlips))
		fs.BoolVar(&o.noStore, "no-store", false, "do not store the result for the web page")
		o.out.Register(fs, "the report (policytest.Report), indented", cli.OutputText, cli.OutputJSON)
		return func(ctx context.Context, pos []string) error {
			if len(pos) > 0 {
				return fmt.Errorf("%w: unexpected argument %q (the file goes with -f)", cli.ErrUsage, pos[0])
			}
			return policyTest(ctx, a, &conn, o)
		}
	})
}

// policyTestOptions are the flags of observer policy test.
type policyTestOptions struct {
	file, agent, harness string
	since                time.Duration
	failOnFlips, noStore bool
	out                  cli.Output
}

func policyTest(ctx context.Context, a *cli.App, conn *cli.ConnFlags, o policyTestOptions) error {
	stdout, stderr := a.Out, a.Err
	if o.file == "" {
		return fmt.Errorf("%w: -f FILE is required", cli.ErrUsage)
	}
	if o.since < 0 {
		return fmt.Errorf("%w: --since %s is negative", cli.ErrUsage, o.since)
	}
	ps, err := readPolicyFile(o.file, a.In)
	if err != nil {
		return err
	}
	cfg := policytest.Config{Policies: ps, Agents: o.agent, Harnesses: o.harness}
	if o.agent != "" && !strings.ContainsAny(o.agent, "*?[\\") {
		cfg.Filter.Agent = o.agent // an agent's id: read only its events
	}
	if o.since > 0 {
		cfg.Filter.Since = time.Now().Add(-o.since)
	}
	if _, err := policytest.New(ps, testOptions(cfg)...); err != nil {
		if errors.Is(err, policytest.ErrInvalid) {
			return fmt.Errorf("%w: %w", cli.ErrUsage, err) // a bad glob: before connecting
		}
		return err
	}
	c, gctx, release, err := conn.OpenGuarded(ctx, "hookbus-observer", a.Log.Logger(stderr), cli.ReadOnly)
	if err != nil {
		return err
	}
	defer release()
	cfg.Progress = func(r *policytest.Report) {
		fmt.Fprintf(stderr, "observer policy test: %d events read, %d flips so far\n", r.Events, r.Flips())
	}
	rep, err := policytest.Run(gctx, c.Bus, cfg)
	if err != nil {
		return c.Explain(err)
	}
	if !o.noStore {
		storeTest(gctx, c.Bus, rep, stderr)
	}
	if o.out.JSON() {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
	} else if err := printPolicyTest(stdout, rep); err != nil {
		return err
	}
	if o.failOnFlips && rep.Flips() > 0 {
		a.Code = exitFlips
		return fmt.Errorf("%s would change", calls(rep.Flips()))
	}
	return nil
}

// testOptions are policytest.New's options for cfg.
func testOptions(cfg policytest.Config) []policytest.Option {
	var opts []policytest.Option
	if cfg.Agents != "" {
		opts = append(opts, policytest.Agents(cfg.Agents))
	}
	if cfg.Harnesses != "" {
		opts = append(opts, policytest.Harnesses(cfg.Harnesses))
	}
	return opts
}

// storeTest stores each policy's part of rep as its last test, for the
// page; a failure is said on stderr and changes nothing else.
func storeTest(ctx context.Context, b *bus.Bus, rep *policytest.Report, stderr io.Writer) {
	st := policies.New(b)
	for _, p := range rep.Policies {
		one := *rep
		one.Policies = []*policytest.PolicyReport{p}
		raw, err := json.Marshal(&one)
		if err == nil {
			err = st.PutTest(ctx, p.Name, raw)
		}
		if err != nil {
			fmt.Fprintf(stderr, "warning: the test of policy %s was not stored for the web page: %v\n", p.Name, err)
		}
	}
}

// printPolicyTest writes rep as text: a summary per policy, the flips per
// agent and harness, then each flip.
func printPolicyTest(w io.Writer, rep *policytest.Report) error {
	scope := "all agents, all harnesses"
	if rep.Agent != "" || rep.Harness != "" {
		scope = "agents " + cmp.Or(rep.Agent, "*") + ", harnesses " + cmp.Or(rep.Harness, "*")
	}
	since := "all the record holds"
	if !rep.Since.IsZero() {
		since = "since " + rep.Since.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(w, "%d policies tested on %d events (%s; %s): %s would change\n\n", len(rep.Policies), rep.Events, since, scope, calls(rep.Flips()))
	tw := table(w, "POLICY\tMODE\tROLLOUT\tCALLS\tSENT\tMATCHED\tDENIED\tALLOWED\tREWRITTEN\tASKED\tFAILED\tNOT REBUILT")
	for _, p := range rep.Policies {
		var sum policytest.Count
		for _, c := range p.Counts {
			sum.Denied, sum.Allowed, sum.Rewritten, sum.Asked, sum.Failed = sum.Denied+c.Denied, sum.Allowed+c.Allowed, sum.Rewritten+c.Rewritten, sum.Asked+c.Asked, sum.Failed+c.Failed
		}
		fmt.Fprintf(tw, "%s\t%s\t%d%%\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", p.Name, p.Mode, p.Rollout, p.Calls, p.Sent, p.Matched,
			sum.Denied, sum.Allowed, sum.Rewritten, sum.Asked, sum.Failed, p.NotReconstructible)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if rep.Flips() == 0 {
		read := 0
		for _, p := range rep.Policies {
			read += p.Calls
		}
		if read == 0 {
			fmt.Fprintln(w, "\nNo recorded call was read: widen --since (0 reads all the record holds), or check --agent and --harness.")
			return nil
		}
		fmt.Fprintln(w, "\nNo call would change.")
		return nil
	}
	fmt.Fprintln(w, "\nPer agent and harness:")
	tw = table(w, "POLICY\tAGENT\tHARNESS\tCALLS\tDENIED\tALLOWED\tREWRITTEN\tASKED\tFAILED")
	for _, p := range rep.Policies {
		for _, c := range p.Counts {
			if c.Total() == 0 {
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n", p.Name, c.Agent, c.Harness, c.Calls, c.Denied, c.Allowed, c.Rewritten, c.Asked, c.Failed)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range rep.Policies {
		if len(p.Flips) == 0 {
			continue
		}
		partial := p.Mode == "enforce" && p.Rollout < 100
		fmt.Fprintf(w, "\n%s: %s would change (%s)\n", p.Name, calls(len(p.Flips)), modeWords(p))
		head := "  FLIP\tAGENT\tHARNESS\tRUN\tCALL\tTOOL\tACTION\tWAS\tRULE\tMESSAGE"
		if partial {
			head += "\tENFORCED"
		}
		tw = table(w, head)
		for _, f := range p.Flips {
			call := cmp.Or(f.CallID, "event "+f.EventID)
			action, rule, msg := "-", "-", "-"
			if f.Action != nil {
				action = actionText(f.Action)
			}
			if f.Rule != "" {
				rule = f.Rule
			}
			if f.Message != "" {
				msg = events.Quote(f.Message, 60)
			}
			was := f.Recorded
			if f.RecordedBy != "" {
				was += " (" + f.RecordedBy + ")"
			}
			line := fmt.Sprintf("  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", f.Kind, f.Agent, f.Harness, f.Run, call, f.Tool, action, was, rule, msg)
			if partial {
				line += "\t" + map[bool]string{true: "yes", false: "no: outside rollout"}[f.Enforced]
			}
			fmt.Fprintln(tw, line)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// modeWords says what the policy as written does with its decisions.
func modeWords(p *policytest.PolicyReport) string {
	switch {
	case p.Mode == "audit":
		return "mode audit: it would only record them"
	case p.Mode == "warn":
		return "mode warn: the calls would go on, with a warning"
	case p.Rollout < 100:
		return fmt.Sprintf("enforced in %d%% of sessions, recorded in the others", p.Rollout)
	}
	return "enforced"
}

// calls is "1 call", "n calls".
func calls(n int) string {
	if n == 1 {
		return "1 call"
	}
	return fmt.Sprintf("%d calls", n)
}

// ageFlag is a --since that takes days ("7d") as well as a Go duration.
type ageFlag time.Duration

func (a *ageFlag) String() string {
	d := time.Duration(*a)
	if d > 0 && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}

func (a *ageFlag) Set(s string) error {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 {
			return fmt.Errorf("%q is not a number of days", s)
		}
		*a = ageFlag(time.Duration(n) * 24 * time.Hour)
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*a = ageFlag(d)
	return nil
}

func (a *ageFlag) Type() string { return "duration" }
