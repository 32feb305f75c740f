package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/internal/cli"
)

const hooksUsage = `observer hooks — the registry of remote interceptors

Usage:
  observer hooks list   [--nats URL | --store DIR]
  observer hooks add    --stage S --plugin P [--order N] [--timeout D] [--policy ignore|fail]
                        [--mode mutate|validate] [--tools GLOB] [--agents GLOB] [--nats URL | --store DIR]
  observer hooks rm     --stage S --plugin P [--nats URL | --store DIR]
  observer hooks grant  PLUGIN [--nats URL | --store DIR]
  observer hooks revoke PLUGIN [--nats URL | --store DIR]
  observer hooks disable PLUGIN [--reason TEXT] [--note TEXT] [--nats URL | --store DIR]
  observer hooks enable  PLUGIN [--note TEXT] [--nats URL | --store DIR]

add registers (or replaces) the plugin's interceptor on a stage; the loop
calls it at <prefix>.hook.<stage>.<plugin>, in order. context.assembled and
model.responded need the plugin to be granted privileged_hooks first (grant);
revoke withdraws the grant, and the loop stops calling the plugin there.
disable is the kill switch: every loop stops calling the plugin, on every
stage, within a second and without a restart; each call skipped is recorded
as a hook.decided with decision "skipped" naming who disabled it, when and
why. enable turns it back on. Who disables or enables a plugin is recorded as
the NATS user of the connection, as the server authenticated it; --note
(formerly --by) is kept beside it as a note, never as who did it. --mode shadow registers a plugin that is called
after the chain, off the run's path: its decisions are recorded (hook.decided
with "shadow": true), never applied. Changes apply to running loops at once.
`

// cmdHooks runs "observer hooks SUBCOMMAND ...".
func cmdHooks(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, hooksUsage)
		return fmt.Errorf("%w: want a subcommand: list, add, rm, grant, revoke, disable or enable", cli.ErrUsage)
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "list", "add", "rm", "grant", "revoke", "disable", "enable":
	case "-h", "--help", "help":
		fmt.Fprint(stdout, hooksUsage)
		return cli.ErrHelp
	default:
		return fmt.Errorf("%w: unknown subcommand %q (want list, add, rm, grant, revoke, disable or enable)", cli.ErrUsage, sub)
	}
	fs := flag.NewFlagSet("observer hooks "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	conn := cli.ConnFlags{StoreFallback: true}
	conn.Register(fs)
	verbose := fs.Bool("v", false, cli.VerboseHelp)
	var hf hookFlags
	if sub == "add" || sub == "rm" {
		hf.register(fs, sub == "add")
	}
	off := interceptors.Disabled{Actor: events.Actor{Channel: events.ChannelCLI}}
	if sub == "disable" || sub == "enable" {
		fs.StringVar(&off.DeclaredBy, "note", "", "a name to record beside who did it (the NATS user of the connection), as a note")
		fs.StringVar(&off.DeclaredBy, "by", "", "the same as --note (kept for scripts: a note, never who did it)")
	}
	if sub == "disable" {
		fs.StringVar(&off.Reason, "reason", "", "why (recorded with every skipped call)")
	}
	pos, err := cli.ParseInterspersed(fs, args)
	if err != nil {
		return err
	}
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
	if sub == "add" || sub == "rm" {
		if reg, err = hf.registration(); err != nil {
			return err
		}
	}

	// Writing into a store directory creates the buckets it lacks; on a
	// server an operator provisions them (observer provision).
	mode := cli.ProvisionStore
	if sub == "list" {
		mode = cli.ReadOnly
	}
	c, err := conn.Open(ctx, "hookbus-observer", cli.Logger(*verbose, stderr), mode)
	if err != nil {
		return err
	}
	defer c.Close()
	gctx, stop := c.Guard(ctx)
	defer stop()
	return c.Explain(usageIfInvalid(hooks(gctx, remote.NewRegistry(c.Bus), sub, reg, plugin, off, stdout)))
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
	case "list":
		return listHooks(ctx, r, stdout)
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
	}
	return nil
}

// hookFlags are the registration flags of add and rm.
type hookFlags struct {
	stage, plugin, policy, mode, tools, agents string
	order                                      int
	timeout                                    string // a Go duration, as in the registry
}

func (f *hookFlags) register(fs *flag.FlagSet, add bool) {
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
	fs.StringVar(&f.agents, "agents", "", "only for agent ids matching this glob")
}

// registration reads the flags; a missing or malformed stage or plugin or
// a malformed timeout is a usage error. The rest is checked by
// Registry.Put.
func (f *hookFlags) registration() (interceptors.Registration, error) {
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
	reg := interceptors.Registration{
		Plugin: f.plugin, Stage: stage, Order: f.order, Policy: interceptors.Policy(f.policy),
		Mode: interceptors.Mode(f.mode), Tools: f.tools, Agents: f.agents,
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
		d.Order, d.Timeout, d.Policy, d.Mode, orAny(d.Tools), orAny(d.Agents))
}

func orAny(glob string) string {
	if glob == "" {
		return "*"
	}
	return glob
}

// listHooks prints the registry as a table, in run order, then the grants.
func listHooks(ctx context.Context, r *remote.Registry, w io.Writer) error {
	regs, err := r.List(ctx)
	if err != nil {
		return err
	}
	granted, err := r.Granted(ctx)
	if err != nil {
		return err
	}
	disabled, err := r.DisabledPlugins(ctx)
	if err != nil {
		return err
	}
	isGranted := make(map[string]bool, len(granted))
	for _, p := range granted {
		isGranted[p] = true
	}
	if len(regs) == 0 {
		fmt.Fprintln(w, "no interceptors registered")
	} else {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "STAGE\tORDER\tPLUGIN\tTIMEOUT\tPOLICY\tMODE\tTOOLS\tAGENTS\tPRIVILEGED\tSTATE")
		for _, reg := range regs {
			d := reg.WithDefaults()
			priv := "no"
			switch {
			case d.Stage.Privileged() && isGranted[d.Plugin]:
				priv = "yes (granted)"
			case d.Stage.Privileged():
				priv = "yes (NOT granted: not called)"
			}
			state := "enabled"
			if _, ok := disabled[d.Plugin]; ok {
				state = "DISABLED"
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
				d.Stage, d.Order, d.Plugin, d.Timeout, d.Policy, d.Mode, orAny(d.Tools), orAny(d.Agents), priv, state)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, p := range slices.Sorted(maps.Keys(disabled)) {
		fmt.Fprintf(w, "disabled: %s\n", describeDisabled(p, disabled[p]))
	}
	if len(granted) == 0 {
		fmt.Fprintln(w, "privileged_hooks granted to: nobody")
	} else {
		fmt.Fprintln(w, "privileged_hooks granted to: "+strings.Join(granted, ", "))
	}
	return nil
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
