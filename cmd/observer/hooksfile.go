package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// hooksFile is the registry as code: what observer hooks apply makes the
// registry match, and what observer hooks export writes.
//
//	hooks:
//	  - stage: tool.before
//	    plugin: guard
//	    order: 10
//	    timeout: 2s
//	    policy: fail
//	    tools: Bash|run_shell_command
//	grants: [rewriter]      # privileged_hooks; leave the key out to leave grants alone
//
// Unknown keys are refused, naming them. The kill switch (observer hooks
// disable) is not part of it: apply never turns a plugin back on.
type hooksFile struct {
	Hooks []hookEntry `yaml:"hooks"`
	// Grants are the plugins granted privileged_hooks; nil (the key left
	// out) leaves the grants as they are.
	Grants *[]string `yaml:"grants,omitempty"`
}

// hookEntry is one registration of a hooks file, as observer hooks add
// takes it.
type hookEntry struct {
	Stage   string `yaml:"stage"`
	Plugin  string `yaml:"plugin"`
	Order   int    `yaml:"order,omitempty"`
	Timeout string `yaml:"timeout,omitempty"`
	Policy  string `yaml:"policy,omitempty"`
	Mode    string `yaml:"mode,omitempty"`
	Tools   string `yaml:"tools,omitempty"`
	Kinds   string `yaml:"kinds,omitempty"`
	Agents  string `yaml:"agents,omitempty"`
}

// registration checks e as observer hooks add checks its flags.
func (e hookEntry) registration() (interceptors.Registration, error) {
	f := hookFlags{stage: e.Stage, plugin: e.Plugin, order: e.Order, timeout: e.Timeout, policy: e.Policy, mode: e.Mode, tools: e.Tools, kinds: e.Kinds, agents: e.Agents}
	return f.registration()
}

// entryOf is reg as a hooks file writes it.
func entryOf(reg interceptors.Registration) hookEntry {
	e := hookEntry{Stage: string(reg.Stage), Plugin: reg.Plugin, Order: reg.Order, Policy: string(reg.Policy),
		Mode: string(reg.Mode), Tools: reg.Tools, Kinds: reg.Kinds, Agents: reg.Agents}
	if reg.Timeout != 0 {
		e.Timeout = reg.Timeout.String()
	}
	return e
}

// readHooksFile reads and checks a hooks file ("-": stdin): every entry as
// observer hooks add checks it, no stage and plugin twice, no grant twice.
// A mistake is a usage error naming the entry.
func readHooksFile(path string, stdin io.Reader) ([]interceptors.Registration, *[]string, error) {
	var raw []byte
	var err error
	if path == "-" {
		raw, err = io.ReadAll(stdin)
	} else {
		raw, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: -f: %v", cli.ErrUsage, err)
	}
	var f hooksFile
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("%w: %s: %v", cli.ErrUsage, path, err)
	}
	var regs []interceptors.Registration
	seen := map[string]int{}
	for i, e := range f.Hooks {
		reg, err := e.registration()
		if err != nil {
			// The checks of observer hooks add name its flags: here, the keys.
			msg := strings.TrimPrefix(strings.TrimPrefix(err.Error(), cli.ErrUsage.Error()+": "), "--")
			return nil, nil, fmt.Errorf("%w: %s: hooks[%d] (%s on %s): %s", cli.ErrUsage, path, i, e.Plugin, e.Stage, msg)
		}
		key := remote.RegistryKey(reg.Stage, reg.Plugin)
		if j, ok := seen[key]; ok {
			return nil, nil, fmt.Errorf("%w: %s: hooks[%d] and hooks[%d] both register %s on %s", cli.ErrUsage, path, j, i, reg.Plugin, reg.Stage)
		}
		seen[key] = i
		regs = append(regs, reg)
	}
	if f.Grants != nil {
		for i, p := range *f.Grants {
			if err := events.ValidateID("plugin", p); err != nil {
				return nil, nil, fmt.Errorf("%w: %s: grants[%d]: %v", cli.ErrUsage, path, i, err)
			}
			if slices.Index(*f.Grants, p) != i {
				return nil, nil, fmt.Errorf("%w: %s: grants lists %s twice", cli.ErrUsage, path, p)
			}
		}
	}
	return regs, f.Grants, nil
}

// hooksChange is one change apply makes.
type hooksChange struct {
	op   string // "+", "~", "-"
	what string // how it is printed
	do   func(ctx context.Context, r *remote.Registry) error
}

// hooksPlan is what apply changes to make the registry match a file, in
// the order it makes them: grants first (a privileged registration needs
// its grant), then registrations added and changed, then removed, then
// grants revoked.
type hooksPlan struct {
	changes   []hooksChange
	unchanged int
}

// planHooks compares the registry with the file's registrations and
// grants (nil: leave grants alone).
func planHooks(ctx context.Context, r *remote.Registry, want []interceptors.Registration, grants *[]string) (*hooksPlan, error) {
	entries, err := r.Entries(ctx)
	if err != nil {
		return nil, err
	}
	// A leased registration is its plugin's, alive while the plugin is: a
	// file leaves it alone unless it names it (then it is kept as code).
	var have []interceptors.Registration
	leased := map[string]bool{}
	for _, e := range entries {
		if e.Leased {
			leased[remote.RegistryKey(e.Stage, e.Plugin)] = true
		}
		have = append(have, e.Registration)
	}
	bad, err := r.Unreadable(ctx)
	if err != nil {
		return nil, err
	}
	granted, err := r.Granted(ctx)
	if err != nil {
		return nil, err
	}
	p := &hooksPlan{}
	var puts, removes, revokes []hooksChange
	if grants != nil {
		for _, g := range *grants {
			if !slices.Contains(granted, g) {
				p.changes = append(p.changes, hooksChange{"+", "grant " + g + " privileged_hooks", func(ctx context.Context, r *remote.Registry) error { return r.Grant(ctx, g) }})
			}
		}
		for _, g := range granted {
			if !slices.Contains(*grants, g) {
				revokes = append(revokes, hooksChange{"-", "revoke privileged_hooks of " + g, func(ctx context.Context, r *remote.Registry) error { return r.Revoke(ctx, g) }})
			}
		}
	}
	current := map[string]interceptors.Registration{}
	for _, reg := range have {
		current[remote.RegistryKey(reg.Stage, reg.Plugin)] = reg
	}
	wanted := map[string]bool{}
	for _, reg := range want {
		key := remote.RegistryKey(reg.Stage, reg.Plugin)
		wanted[key] = true
		old, ok := current[key]
		switch {
		case !ok:
			puts = append(puts, hooksChange{"+", fmt.Sprintf("%s on %s (%s)", reg.Plugin, reg.Stage, describe(reg)), putHook(reg)})
		case old.WithDefaults() != reg.WithDefaults():
			puts = append(puts, hooksChange{"~", fmt.Sprintf("%s on %s: %s", reg.Plugin, reg.Stage, diffRegistrations(old, reg)), putHook(reg)})
		case leased[key]:
			puts = append(puts, hooksChange{"~", fmt.Sprintf("%s on %s: kept without its plugin's lease", reg.Plugin, reg.Stage), putHook(reg)})
		default:
			p.unchanged++
		}
	}
	for _, reg := range have {
		if key := remote.RegistryKey(reg.Stage, reg.Plugin); !wanted[key] && !leased[key] {
			removes = append(removes, hooksChange{"-", fmt.Sprintf("%s on %s (%s)", reg.Plugin, reg.Stage, describe(reg)),
				func(ctx context.Context, r *remote.Registry) error { return r.Delete(ctx, reg.Stage, reg.Plugin) }})
		}
	}
	for _, u := range bad {
		removes = append(removes, hooksChange{"-", fmt.Sprintf("entry %s, which does not read (%v)", u.Key, u.Err),
			func(ctx context.Context, r *remote.Registry) error { return r.DeleteEntry(ctx, u.Key) }})
	}
	p.changes = append(append(append(p.changes, puts...), removes...), revokes...)
	return p, nil
}

func putHook(reg interceptors.Registration) func(context.Context, *remote.Registry) error {
	return func(ctx context.Context, r *remote.Registry) error { return r.Put(ctx, reg) }
}

// diffRegistrations names the settings that differ: "timeout 5s -> 2s,
// policy ignore -> fail".
func diffRegistrations(old, reg interceptors.Registration) string {
	o, n := old.WithDefaults(), reg.WithDefaults()
	var parts []string
	for _, f := range []struct{ name, old, new string }{
		{"order", fmt.Sprint(o.Order), fmt.Sprint(n.Order)},
		{"timeout", o.Timeout.String(), n.Timeout.String()},
		{"policy", string(o.Policy), string(n.Policy)},
		{"mode", string(o.Mode), string(n.Mode)},
		{"tools", cmp.Or(o.Tools, "*"), cmp.Or(n.Tools, "*")},
		{"kinds", cmp.Or(o.Kinds, "*"), cmp.Or(n.Kinds, "*")},
		{"agents", cmp.Or(o.Agents, "*"), cmp.Or(n.Agents, "*")},
	} {
		if f.old != f.new {
			parts = append(parts, f.name+" "+f.old+" -> "+f.new)
		}
	}
	return strings.Join(parts, ", ")
}

// print writes the plan, one change a line, and a summary.
func (p *hooksPlan) print(w io.Writer, dryRun bool) {
	adds, changes, removes := 0, 0, 0
	for _, c := range p.changes {
		fmt.Fprintf(w, "%s %s\n", c.op, c.what)
		switch c.op {
		case "+":
			adds++
		case "~":
			changes++
		case "-":
			removes++
		}
	}
	summary := fmt.Sprintf("%d to add, %d to change, %d to remove, %d unchanged", adds, changes, removes, p.unchanged)
	if !dryRun {
		summary = fmt.Sprintf("%d added, %d changed, %d removed, %d unchanged", adds, changes, removes, p.unchanged)
	}
	if dryRun {
		summary += " (dry run: nothing was changed)"
	}
	fmt.Fprintln(w, summary)
}

const hooksApplyLong = `Makes the registry match a hooks file (YAML; "-" reads stdin): registrations
in the file and not in the registry are added, those whose settings differ
are changed, and those in the registry and not in the file are removed,
with any entry that does not read. When the file has a grants list, plugins
are granted and revoked privileged_hooks to match it; without one, grants
are left alone. Plugins turned off with "observer hooks disable" stay off.
--dry-run prints the changes without making them. Every entry is checked as
"observer hooks add" checks its flags before anything changes:

  hooks:
    - stage: tool.before
      plugin: guard
      order: 10
      timeout: 2s
      policy: fail
      tools: Bash|run_shell_command
  grants: [rewriter]

"observer hooks export" writes the registry in this format.`

// hooksApplyCmd is observer hooks apply.
func hooksApplyCmd(a *cli.App) *cobra.Command {
	return cli.NoArgsCommand("apply -f FILE [--dry-run] [flags]", "Make the registry match a hooks file (hooks as code)", hooksApplyLong, func(fs *pflag.FlagSet) cli.Run {
		conn := cli.ConnFlags{App: a, StoreFallback: true}
		conn.Register(fs)
		file := fs.StringP("filename", "f", "", "the hooks file (YAML), \"-\" for stdin (required)")
		dryRun := fs.Bool("dry-run", false, "print the changes, make none")
		return func(ctx context.Context, _ []string) error {
			if *file == "" {
				return fmt.Errorf("%w: give the hooks file: -f FILE (\"-\" for stdin)", cli.ErrUsage)
			}
			want, grants, err := readHooksFile(*file, a.In)
			if err != nil {
				return err
			}
			mode := cli.ProvisionStore
			if *dryRun {
				mode = cli.ReadOnly
			}
			c, gctx, release, err := conn.OpenGuarded(ctx, "hookbus-observer", a.Log.Logger(a.Err), mode)
			if err != nil {
				return err
			}
			defer release()
			r := remote.NewRegistry(c.Bus)
			plan, err := planHooks(gctx, r, want, grants)
			if err != nil {
				return c.Explain(err)
			}
			if !*dryRun {
				for _, ch := range plan.changes {
					if err := ch.do(gctx, r); err != nil {
						return c.Explain(usageIfInvalid(fmt.Errorf("%s %s: %w", ch.op, ch.what, err)))
					}
				}
			}
			plan.print(a.Out, *dryRun)
			return nil
		}
	})
}

// hooksExportCmd is observer hooks export.
func hooksExportCmd(a *cli.App) *cobra.Command {
	return cli.NoArgsCommand("export [flags]", "Write the registry as a hooks file (for observer hooks apply)",
		`Writes the registry's registrations, in run order, and the plugins granted privileged_hooks as a hooks file (YAML) on stdout: "observer hooks apply -f" of it changes nothing. Entries that do not read are left out, and said on stderr.`,
		func(fs *pflag.FlagSet) cli.Run {
			conn := cli.ConnFlags{App: a, StoreFallback: true}
			conn.Register(fs)
			return func(ctx context.Context, _ []string) error {
				c, gctx, release, err := conn.OpenGuarded(ctx, "hookbus-observer", a.Log.Logger(a.Err), cli.ReadOnly)
				if err != nil {
					return err
				}
				defer release()
				return c.Explain(exportHooks(gctx, remote.NewRegistry(c.Bus), a.Out, a.Err))
			}
		})
}

// exportHooks writes the registry as a hooks file.
func exportHooks(ctx context.Context, r *remote.Registry, w, stderr io.Writer) error {
	st, err := readRegistry(ctx, r)
	if err != nil {
		return err
	}
	granted, bad := st.granted, st.bad
	for _, u := range bad {
		fmt.Fprintf(stderr, "left out: entry %s, which does not read (%v)\n", u.Key, u.Err)
	}
	var regs []interceptors.Registration
	for i, reg := range st.regs {
		if st.entries[i].Leased {
			fmt.Fprintf(stderr, "left out: %s on %s, registered by its plugin with a lease (it lives while the plugin does)\n", reg.Plugin, reg.Stage)
			continue
		}
		regs = append(regs, reg)
	}
	f := hooksFile{Hooks: make([]hookEntry, len(regs)), Grants: &granted}
	if granted == nil {
		f.Grants = &[]string{}
	}
	for i, reg := range regs {
		f.Hooks[i] = entryOf(reg)
	}
	fmt.Fprintf(w, "# The hookbus interceptor registry, exported %s: observer hooks apply -f FILE\n", time.Now().UTC().Format(time.RFC3339))
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return err
	}
	return enc.Close()
}
