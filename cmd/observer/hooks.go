package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

const hooksLong = `The registry of remote interceptors: which plugin the loop calls on which
stage, in which order, with which timeout and failure policy.

add registers (or replaces) the plugin's interceptor on a stage; the loop
calls it at <prefix>.hook.<stage>.<plugin>, in order. context.assembled and
model.responded need the plugin to be granted privileged_hooks first (grant);
revoke withdraws the grant, and the loop stops calling the plugin there.
disable is the kill switch: every loop stops calling the plugin, on every
stage, within a second and without a restart; each call skipped is recorded
as a hook.decided with decision "skipped" naming who disabled it, when and
why. enable turns it back on. Who disables or enables a plugin is recorded as
the NATS user of the connection, as the server authenticated it; --note
(formerly --by) is kept beside it as a note, never as who did it. --mode
shadow registers a plugin that is called after the chain, off the run's path:
its decisions are recorded (hook.decided with "shadow": true), never applied.

A plugin served with a lease (remote.Serve's Register, the TypeScript SDK's
intercept with register) holds its registrations while it lives: list shows
them "leased", and "GONE" once the plugin stopped renewing its lease (it
died): loops no longer call them, and prune removes them. A plugin that
stops cleanly removes its own.

apply makes the registry match a file (hooks as code: adds, updates and
removes registrations, leaving leased ones to their plugins, and grants when
the file lists them); --dry-run prints
the changes without making them. export writes the registry in that format.
Changes apply to running loops at once.`

// hookSubcommands are observer hooks' subcommands, in the order the help
// lists them.
var hookSubcommands = []string{"list", "add", "rm", "grant", "revoke", "disable", "enable", "apply", "export", "prune"}

// hooksCmd is "observer hooks SUBCOMMAND ...".
func hooksCmd(a *cli.App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hooks SUBCOMMAND [flags]",
		Short: "The registry of remote interceptors: list, add, rm, grant, revoke, disable, enable, apply, export, prune",
		Long:  hooksLong,
		// A subcommand's flags may come first: every argument is this
		// command's to read when no subcommand matched.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			want := strings.Join(hookSubcommands, ", ")
			switch {
			case len(args) == 0:
				cmd.SetOut(a.Err)
				_ = cmd.Usage()
				return fmt.Errorf("%w: want a subcommand: %s", cli.ErrUsage, want)
			case args[0] == "-h" || args[0] == "--help":
				return cmd.Help()
			}
			return fmt.Errorf("%w: unknown subcommand %q (want %s)", cli.ErrUsage, args[0], want)
		},
	}
	for _, sub := range hookSubcommands[:7] {
		cmd.AddCommand(hookSub(a, sub))
	}
	cmd.AddCommand(hooksApplyCmd(a), hooksExportCmd(a), hookSub(a, "prune"))
	return cmd
}

// hookShort are the one-line helps of observer hooks' subcommands.
var hookShort = map[string][2]string{
	"list":    {"list [flags]", "List the registrations in run order, the grants and the plugins disabled"},
	"add":     {"add --stage S --plugin P [flags]", "Register (or replace) a plugin's interceptor on a stage"},
	"rm":      {"rm --stage S --plugin P [flags]", "Remove a plugin's registration on a stage, valid or not"},
	"grant":   {"grant PLUGIN [flags]", "Grant a plugin privileged_hooks (context.assembled, model.responded)"},
	"revoke":  {"revoke PLUGIN [flags]", "Withdraw a plugin's privileged_hooks"},
	"disable": {"disable PLUGIN [--reason TEXT] [flags]", "Turn a plugin off everywhere within a second (the kill switch)"},
	"enable":  {"enable PLUGIN [flags]", "Turn a disabled plugin back on"},
	"prune":   {"prune [flags]", "Remove the registrations of plugins gone (leased by a plugin that no longer renews its lease)"},
}

// hookSub is one of observer hooks' imperative subcommands.
func hookSub(a *cli.App, sub string) *cobra.Command {
	return cli.Command(hookShort[sub][0], hookShort[sub][1], "", func(fs *pflag.FlagSet) cli.Run {
		conn := cli.ConnFlags{App: a, StoreFallback: true}
		conn.Register(fs)
		var hf hookFlags
		if sub == "add" || sub == "rm" {
			hf.register(fs, sub == "add")
		}
		var out cli.Output
		if sub == "list" {
			out.Register(fs, "the registrations, the grants and the plugins disabled, one document")
		}
		off := interceptors.Disabled{Actor: events.Actor{Channel: events.ChannelCLI}}
		if sub == "disable" || sub == "enable" {
			fs.StringVar(&off.DeclaredBy, "note", "", "a name to record beside who did it (the NATS user of the connection), as a note")
			fs.StringVar(&off.DeclaredBy, "by", "", "the same as --note (kept for scripts: a note, never who did it)")
		}
		if sub == "disable" {
			fs.StringVar(&off.Reason, "reason", "", "why (recorded with every skipped call)")
		}
		return func(ctx context.Context, pos []string) error {
			var plugin string
			switch sub {
			case "grant", "revoke", "disable", "enable":
				if len(pos) != 1 {
					return fmt.Errorf("%w: %s takes one plugin id, got %d arguments", cli.ErrUsage, sub, len(pos))
				}
				plugin = pos[0]
				if err := events.ValidateID("plugin", plugin); err != nil {
					return fmt.Errorf("%w: %v", cli.ErrUsage, err)
				}
			default:
				if len(pos) > 0 {
					return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, pos[0])
				}
			}
			var reg interceptors.Registration
			var err error
			switch sub {
			case "add":
				reg, err = hf.registration()
			case "rm":
				reg, err = hf.entry()
			}
			if err != nil {
				return err
			}
			// Writing into a store directory creates the buckets it lacks; on a
			// server an operator provisions them (observer provision).
			mode := cli.ProvisionStore
			if sub == "list" {
				mode = cli.ReadOnly
			}
			c, gctx, release, err := conn.OpenGuarded(ctx, "hookbus-observer", a.Log.Logger(a.Err), mode)
			if err != nil {
				return err
			}
			defer release()
			r := remote.NewRegistry(c.Bus)
			if sub == "list" {
				return c.Explain(listHooks(gctx, r, a.Out, out.JSON()))
			}
			return c.Explain(usageIfInvalid(hooks(gctx, r, sub, reg, plugin, off, a.Out)))
		}
	})
}

// usageIfInvalid marks the registry's refusals of a bad id or registration
// as usage mistakes (exit 2); the refusals that depend on the bus' state (a
// missing grant, an unknown entry) stay failures.
func usageIfInvalid(err error) error {
	if errors.Is(err, events.ErrInvalidID) || errors.Is(err, interceptors.ErrInvalidRegistration) {
		return fmt.Errorf("%w: %w", cli.ErrUsage, err)
	}
	return err
}

// hooks runs the subcommand on the registry.
func hooks(ctx context.Context, r *remote.Registry, sub string, reg interceptors.Registration, plugin string, off interceptors.Disabled, stdout io.Writer) error {
	switch sub {
	case "add":
		if err := r.Put(ctx, reg); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "registered %s on %s (%s)\n", reg.Plugin, reg.Stage, describe(reg))
	case "rm":
		if err := r.Delete(ctx, reg.Stage, reg.Plugin); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "removed %s from %s\n", reg.Plugin, reg.Stage)
	case "grant":
		if err := r.Grant(ctx, plugin); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "granted %s privileged_hooks\n", plugin)
	case "revoke":
		if err := r.Revoke(ctx, plugin); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked privileged_hooks of %s\n", plugin)
	case "disable":
		if err := r.Disable(ctx, plugin, off); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "disabled %s everywhere (running loops stop calling it within a second)\n", plugin)
	case "enable":
		if err := r.Enable(ctx, plugin, off.Actor); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "enabled %s\n", plugin)
	case "prune":
		pruned, err := r.Prune(ctx)
		for _, reg := range pruned {
			fmt.Fprintf(stdout, "removed %s from %s (its plugin is gone)\n", reg.Plugin, reg.Stage)
		}
		if err != nil {
			return err
		}
		if len(pruned) == 0 {
			fmt.Fprintln(stdout, "nothing to prune: every leased registration's plugin is live")
		}
	}
	return nil
}

// hookFlags are the registration flags of add and rm.
type hookFlags struct {
	stage, plugin, policy, mode, tools, kinds, agents string
	order                                             int
	timeout                                           string // a Go duration, as in the registry
}

func (f *hookFlags) register(fs *pflag.FlagSet, add bool) {
	fs.StringVar(&f.stage, "stage", "", "stage (e.g. tool.before); required")
	fs.StringVar(&f.plugin, "plugin", "", "plugin id (the service's name); required")
	if !add {
		return
	}
	fs.IntVar(&f.order, "order", 0, "lower runs first; equal orders run in registration order")
	fs.StringVar(&f.timeout, "timeout", "", "per-call timeout, more than 0 (default 5s, at most 30s)")
	fs.StringVar(&f.policy, "policy", "", "on failure: ignore (fail open, the default) or fail (deny)")
	fs.StringVar(&f.mode, "mode", "", "mutate (the default), validate (allow or deny only, run in parallel) or shadow (called after the chain, recorded, never applied)")
	fs.StringVar(&f.tools, "tools", "", "only for tool names matching this glob (fs_*|bash); tool stages only")
	fs.StringVar(&f.kinds, "kinds", "", "only for calls of these action kinds, whatever the tool's name (shell|file.write, file.*; docs/ACTIONS.md); tool.before and tool.after only")
	fs.StringVar(&f.agents, "agents", "", "only for agent ids matching this glob")
}

// entry reads the stage and plugin of the entry rm removes: a missing or
// malformed stage or plugin is a usage error. Nothing else is checked: an
// entry that is not a valid registration (every loop warns about it) is
// removed all the same.
func (f *hookFlags) entry() (interceptors.Registration, error) {
	if f.stage == "" || f.plugin == "" {
		return interceptors.Registration{}, fmt.Errorf("%w: --stage and --plugin are required", cli.ErrUsage)
	}
	stage, err := events.ParseStage(f.stage)
	if err != nil {
		return interceptors.Registration{}, fmt.Errorf("%w: --stage: %v", cli.ErrUsage, err)
	}
	if err := events.ValidateID("plugin", f.plugin); err != nil {
		return interceptors.Registration{}, fmt.Errorf("%w: --plugin: %v", cli.ErrUsage, err)
	}
	return interceptors.Registration{Plugin: f.plugin, Stage: stage}, nil
}

// registration reads the flags; a missing or malformed stage or plugin or
// a malformed timeout is a usage error. The rest is checked by
// Registry.Put.
func (f *hookFlags) registration() (interceptors.Registration, error) {
	key, err := f.entry()
	if err != nil {
		return key, err
	}
	reg := interceptors.Registration{
		Plugin: key.Plugin, Stage: key.Stage, Order: f.order, Policy: interceptors.Policy(f.policy),
		Mode: interceptors.Mode(f.mode), Tools: f.tools, Kinds: f.kinds, Agents: f.agents,
	}
	if f.timeout != "" {
		d, err := time.ParseDuration(f.timeout)
		if err != nil {
			return interceptors.Registration{}, fmt.Errorf("%w: --timeout %q is not a duration (5s, 250ms)", cli.ErrUsage, f.timeout)
		}
		if d <= 0 {
			return interceptors.Registration{}, fmt.Errorf("%w: --timeout %s: give a positive duration (leave it out for 5s)", cli.ErrUsage, f.timeout)
		}
		reg.Timeout = d
	}
	// What can be checked without the bus is a usage mistake.
	if err := reg.Validate(); err != nil {
		return interceptors.Registration{}, fmt.Errorf("%w: %w", cli.ErrUsage, err)
	}
	return reg, nil
}

// describe summarises a registration's settings, defaults included.
func describe(reg interceptors.Registration) string {
	d := reg.WithDefaults()
	return fmt.Sprintf("order %d, timeout %s, policy %s, mode %s, tools %s, agents %s",
		d.Order, d.Timeout, d.Policy, d.Mode, toolsOf(d), cmp.Or(d.Agents, "*"))
}

// toolsOf is a registration's tools matcher, and its kinds when it has
// them ("* (kinds shell)").
func toolsOf(reg interceptors.Registration) string {
	if reg.Kinds == "" {
		return cmp.Or(reg.Tools, "*")
	}
	return cmp.Or(reg.Tools, "*") + " (kinds " + reg.Kinds + ")"
}

// hookList is observer hooks list --output json.
type hookList struct {
	// Hooks are the registrations, in run order, with their defaults.
	Hooks []interceptors.Registration `json:"hooks"`
	// Granted are the plugins granted privileged_hooks.
	Granted []string `json:"privileged_hooks"`
	// Disabled are the plugins turned off, by plugin.
	Disabled map[string]interceptors.Disabled `json:"disabled"`
	// Unreadable are the entries that hold no valid registration, with
	// why (observer hooks rm removes them).
	Unreadable map[string]string `json:"unreadable,omitempty"`
	// Leased are the registrations their plugin holds with a lease, by key
	// ("<stage>.<plugin>"): "live" while a plugin instance renews it,
	// "gone" when none does (not called; observer hooks prune removes it).
	Leased map[string]string `json:"leased,omitempty"`
}

// listHooks prints the registry as a table, in run order, then the grants
// (asJSON: one hookList document).
func listHooks(ctx context.Context, r *remote.Registry, w io.Writer, asJSON bool) error {
	st, err := readRegistry(ctx, r)
	if err != nil {
		return err
	}
	regs, granted, disabled, bad := st.regs, st.granted, st.disabled, st.bad
	if asJSON {
		l := hookList{Granted: granted, Disabled: disabled, Hooks: make([]interceptors.Registration, len(regs))}
		for i, reg := range regs {
			l.Hooks[i] = reg.WithDefaults()
			if e := st.entries[i]; e.Leased {
				if l.Leased == nil {
					l.Leased = map[string]string{}
				}
				l.Leased[remote.RegistryKey(reg.Stage, reg.Plugin)] = leaseState(e)
			}
		}
		for _, u := range bad {
			if l.Unreadable == nil {
				l.Unreadable = map[string]string{}
			}
			l.Unreadable[u.Key] = u.Err.Error()
		}
		if l.Granted == nil {
			l.Granted = []string{}
		}
		return writeJSON(w, l)
	}
	if len(regs) == 0 {
		fmt.Fprintln(w, "no interceptors registered")
	} else {
		tw := table(w, "STAGE\tORDER\tPLUGIN\tTIMEOUT\tPOLICY\tMODE\tTOOLS\tAGENTS\tPRIVILEGED\tSTATE")
		for i, reg := range regs {
			d := reg.WithDefaults()
			priv := "no"
			switch {
			case d.Stage.Privileged() && slices.Contains(granted, d.Plugin):
				priv = "yes (granted)"
			case d.Stage.Privileged():
				priv = "yes (NOT granted: not called)"
			}
			state := "enabled"
			if e := st.entries[i]; e.Gone {
				state = "GONE (its plugin's lease lapsed: not called; observer hooks prune removes it)"
			} else if e.Leased {
				state = fmt.Sprintf("enabled, leased (%d live)", len(e.Instances))
			}
			if _, ok := disabled[d.Plugin]; ok {
				state = "DISABLED"
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
				d.Stage, d.Order, d.Plugin, d.Timeout, d.Policy, d.Mode, toolsOf(d), cmp.Or(d.Agents, "*"), priv, state)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, p := range slices.Sorted(maps.Keys(disabled)) {
		fmt.Fprintf(w, "disabled: %s\n", describeDisabled(p, disabled[p]))
	}
	for _, u := range bad {
		fmt.Fprintf(w, "unreadable entry %s (not called; observer hooks rm removes it): %v\n", u.Key, u.Err)
	}
	if len(granted) == 0 {
		fmt.Fprintln(w, "privileged_hooks granted to: nobody")
	} else {
		fmt.Fprintln(w, "privileged_hooks granted to: "+strings.Join(granted, ", "))
	}
	return nil
}

// leaseState is a leased registration's state in observer hooks list.
func leaseState(e remote.Entry) string {
	if e.Gone {
		return "gone"
	}
	return "live"
}

// describeDisabled says who disabled plugin, when and why.
func describeDisabled(plugin string, d interceptors.Disabled) string {
	s := plugin
	switch {
	case d.Identity != "":
		s += " by " + d.Actor.String()
	case d.By != "":
		s += " by " + d.By + " (declared; no identity recorded)"
	}
	if !d.At.IsZero() {
		s += " at " + d.At.UTC().Format(time.RFC3339)
	}
	if d.Reason != "" {
		s += ": " + d.Reason
	}
	return s
}

// registryState is the registry as read at one moment: the registrations
// in run order, the trust grants, the plugins the kill switch disabled, and
// the entries that do not read.
type registryState struct {
	regs     []interceptors.Registration
	entries  []remote.Entry // regs with their leases
	granted  []string
	disabled map[string]interceptors.Disabled
	bad      []remote.Unreadable
}

// readRegistry reads the registry whole.
func readRegistry(ctx context.Context, r *remote.Registry) (st registryState, err error) {
	if st.entries, err = r.Entries(ctx); err != nil {
		return st, err
	}
	for _, e := range st.entries {
		st.regs = append(st.regs, e.Registration)
	}
	if st.granted, err = r.Granted(ctx); err != nil {
		return st, err
	}
	if st.disabled, err = r.DisabledPlugins(ctx); err != nil {
		return st, err
	}
	st.bad, err = r.Unreadable(ctx)
	return st, err
}
