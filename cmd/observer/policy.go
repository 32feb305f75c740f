package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hookbus/hookbus/bus/policies"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/policy"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

const policyLong = `Policies are rules in CEL over the calls of every agent, written as YAML
files (docs/POLICIES.md). They are held in the bus (the trust bucket, which
only the admin writes) and evaluated in process by every worker and by the
coding-agent bridge, which pick up changes live, without a restart.

apply stores a file's policies once every one compiles (a policy that does
not type-check, or costs too much to evaluate, is refused with its
file:line:column and nothing is stored); lint makes the same checks and
stores nothing. export writes the stored policies as applied, ready for
apply -f. list shows each stored policy, its version (a digest of its
source), mode, rollout, what it matches, and who applied it when. delete
removes a policy everywhere. Who applies or deletes a policy is recorded as
the NATS user of the connection, as the server authenticated it.`

// policyCmd is "observer policy SUBCOMMAND ...".
func policyCmd(a *cli.App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy SUBCOMMAND [flags]",
		Short: "Policies in CEL held in the bus: apply, lint, export, list, delete",
		Long:  policyLong,
		Args:  cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(cmd.ErrOrStderr())
			_ = cmd.Usage()
			return fmt.Errorf("%w: want a subcommand: apply, lint, export, list, delete", cli.ErrUsage)
		},
	}
	cmd.AddCommand(policyApplyCmd(a, false), policyApplyCmd(a, true), policyExportCmd(a), policyListCmd(a), policyDeleteCmd(a), policyTestCmd(a))
	// Subcommands of their own files (observer policy test: policytest.go)
	// are added here, one AddCommand each.
	return cmd
}

// readPolicyFile parses the policy file path ("-" for stdin) and compiles
// every policy in it: a policy that does not is an error naming its
// file:line:column.
func readPolicyFile(path string, stdin io.Reader) ([]*policy.Policy, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: give the policy file: -f FILE (\"-\" for stdin)", cli.ErrUsage)
	}
	var src []byte
	var err error
	name := path
	if path == "-" {
		name = "<stdin>"
		src, err = io.ReadAll(stdin)
	} else {
		src, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: -f: %v", cli.ErrUsage, err)
	}
	ps, err := policy.Parse(name, src)
	if err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("%w: %s holds no policy", policy.ErrInvalid, name)
	}
	seen := map[string]bool{}
	for _, p := range ps {
		if seen[p.Name] {
			return nil, fmt.Errorf("%w: %s: policy %s is defined twice", policy.ErrInvalid, name, p.Name)
		}
		seen[p.Name] = true
		if err := policies.Check(p); err != nil {
			return nil, err
		}
	}
	return ps, nil
}

// policyApplyCmd is observer policy apply, or lint when lint.
func policyApplyCmd(a *cli.App, lint bool) *cobra.Command {
	use, short := "apply -f FILE [flags]", "Store a policy file's policies, once every one compiles"
	long := `Parses and compiles every policy of the file (YAML, one policy a document) and stores them in the bus, where every worker and bridge picks them up within a second. A file with a policy that does not compile stores nothing: the error names its file:line:column and the command exits 1. A policy whose version is stored already is left as it is ("unchanged"). Prints each policy's name, version and mode.`
	if lint {
		use, short = "lint -f FILE", "Check a policy file as apply does, storing nothing"
		long = `Parses and compiles every policy of the file, as apply does, and stores nothing: it needs no bus. Prints each policy's name, version and mode, or the first error with its file:line:column (exit 1).`
	}
	return cli.NoArgsCommand(use, short, long, func(fs *pflag.FlagSet) cli.Run {
		conn := cli.ConnFlags{App: a, StoreFallback: true}
		if !lint {
			conn.Register(fs)
		}
		file := fs.StringP("filename", "f", "", "the policy file (YAML), \"-\" for stdin (required)")
		var note string
		if !lint {
			fs.StringVar(&note, "note", "", "a name to record beside who applied it (the NATS user of the connection), as a note")
		}
		return func(ctx context.Context, _ []string) error {
			ps, err := readPolicyFile(*file, a.In)
			if err != nil {
				return err
			}
			if lint {
				w := newTable(a.Out)
				for _, p := range ps {
					fmt.Fprintf(w, "%s\t%s\t%s\tok\n", p.Name, p.Version, string(p.Spec.Mode))
				}
				return w.Flush()
			}
			c, gctx, release, err := conn.OpenGuarded(ctx, "hookbus-observer", a.Log.Logger(a.Err), cli.ProvisionStore)
			if err != nil {
				return err
			}
			defer release()
			st := policies.New(c.Bus)
			w := newTable(a.Out)
			defer w.Flush()
			for _, p := range ps {
				_, changed, err := st.Put(gctx, p, events.Actor{Channel: events.ChannelCLI, DeclaredBy: note})
				if err != nil {
					return c.Explain(usageIfInvalid(err))
				}
				what := "applied"
				if !changed {
					what = "unchanged"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", p.Name, p.Version, string(p.Spec.Mode), what)
			}
			return nil
		}
	})
}

// policyExportCmd is observer policy export.
func policyExportCmd(a *cli.App) *cobra.Command {
	return cli.Command("export [NAME...] [flags]", "Write stored policies as applied (for observer policy apply -f)",
		`Writes the stored policies (all of them, or those named), by name, as the YAML documents they were applied as: "observer policy apply -f" of the output changes nothing. An entry that does not read is left out, and said on stderr.`,
		func(fs *pflag.FlagSet) cli.Run {
			conn := cli.ConnFlags{App: a, StoreFallback: true}
			conn.Register(fs)
			return func(ctx context.Context, names []string) error {
				c, gctx, release, err := conn.OpenGuarded(ctx, "hookbus-observer", a.Log.Logger(a.Err), cli.ReadOnly)
				if err != nil {
					return err
				}
				defer release()
				recs, err := storedPolicies(gctx, policies.New(c.Bus), names, a.Err)
				if err != nil {
					return c.Explain(usageIfInvalid(err))
				}
				for i, r := range recs {
					if i > 0 {
						fmt.Fprintln(a.Out, "---")
					}
					src := r.Source
					if !strings.HasSuffix(src, "\n") {
						src += "\n"
					}
					fmt.Fprint(a.Out, src)
				}
				return nil
			}
		})
}

// storedPolicies returns the stored policies named, or all of them when
// none is; unreadable entries are said on stderr.
func storedPolicies(ctx context.Context, st *policies.Store, names []string, stderr io.Writer) ([]policies.Record, error) {
	if len(names) > 0 {
		out := make([]policies.Record, 0, len(names))
		for _, n := range names {
			r, err := st.Get(ctx, n)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		return out, nil
	}
	recs, skipped, err := st.List(ctx)
	for _, e := range skipped {
		fmt.Fprintf(stderr, "observer policy: left out: %v\n", e)
	}
	return recs, err
}

// policyRow is one stored policy as observer policy list shows it.
type policyRow struct {
	Name      string       `json:"name"`
	Version   string       `json:"version"`
	Mode      string       `json:"mode"`
	Rollout   int          `json:"rollout"`
	Stages    []string     `json:"stages"`
	Kinds     []string     `json:"kinds,omitempty"`
	AppliedBy events.Actor `json:"applied_by"`
	AppliedAt time.Time    `json:"applied_at"`
	Error     string       `json:"error,omitempty"`
}

// rowOf reads a stored policy for list.
func rowOf(r policies.Record) policyRow {
	row := policyRow{Name: r.Name, Version: r.Version, AppliedBy: r.AppliedBy, AppliedAt: r.AppliedAt}
	p, err := r.Policy()
	if err != nil {
		row.Error = err.Error()
		return row
	}
	row.Mode, row.Rollout, row.Kinds = string(p.Spec.Mode), p.Spec.Rollout, p.Spec.Match.Kinds
	for _, s := range p.Spec.Match.Stages {
		row.Stages = append(row.Stages, string(s))
	}
	return row
}

// policyListCmd is observer policy list.
func policyListCmd(a *cli.App) *cobra.Command {
	return cli.NoArgsCommand("list [flags]", "List the stored policies: version, mode, rollout, what they match, who applied them",
		"", func(fs *pflag.FlagSet) cli.Run {
			conn := cli.ConnFlags{App: a, StoreFallback: true}
			conn.Register(fs)
			var out cli.Output
			out.Register(fs, "an array of {name, version, mode, rollout, stages, kinds, applied_by, applied_at}")
			return func(ctx context.Context, _ []string) error {
				c, gctx, release, err := conn.OpenGuarded(ctx, "hookbus-observer", a.Log.Logger(a.Err), cli.ReadOnly)
				if err != nil {
					return err
				}
				defer release()
				recs, err := storedPolicies(gctx, policies.New(c.Bus), nil, a.Err)
				if err != nil {
					return c.Explain(err)
				}
				rows := make([]policyRow, 0, len(recs))
				for _, r := range recs {
					rows = append(rows, rowOf(r))
				}
				if out.JSON() {
					return writeJSON(a.Out, rows)
				}
				return printPolicies(a.Out, rows)
			}
		})
}

func printPolicies(w io.Writer, rows []policyRow) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "no policies stored (observer policy apply -f FILE)")
		return err
	}
	tw := table(w, "NAME\tVERSION\tMODE\tROLLOUT\tSTAGES\tKINDS\tAPPLIED BY\tAPPLIED AT")
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\t?\t\t\t\t%s\t%s\t(%s)\n", r.Name, r.Version, r.AppliedBy.Identity, r.AppliedAt.Format(time.RFC3339), r.Error)
			continue
		}
		kinds := cmp.Or(strings.Join(r.Kinds, "|"), "*")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s%%\t%s\t%s\t%s\t%s\n", r.Name, r.Version, r.Mode, strconv.Itoa(r.Rollout),
			strings.Join(r.Stages, ","), kinds, r.AppliedBy.Identity, r.AppliedAt.Format(time.RFC3339))
	}
	return tw.Flush()
}

// policyDeleteCmd is observer policy delete.
func policyDeleteCmd(a *cli.App) *cobra.Command {
	return cli.Command("delete NAME [flags]", "Remove a stored policy: every worker and bridge stops applying it",
		"", func(fs *pflag.FlagSet) cli.Run {
			conn := cli.ConnFlags{App: a, StoreFallback: true}
			conn.Register(fs)
			note := fs.String("note", "", "a name to record beside who deleted it (the NATS user of the connection), as a note")
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return fmt.Errorf("%w: delete takes one policy name, got %d arguments", cli.ErrUsage, len(args))
				}
				c, gctx, release, err := conn.OpenGuarded(ctx, "hookbus-observer", a.Log.Logger(a.Err), cli.ProvisionStore)
				if err != nil {
					return err
				}
				defer release()
				if err := policies.New(c.Bus).Delete(gctx, args[0], events.Actor{Channel: events.ChannelCLI, DeclaredBy: *note}); err != nil {
					return c.Explain(usageIfInvalid(err))
				}
				fmt.Fprintf(a.Out, "policy %s deleted\n", args[0])
				return nil
			}
		})
}
