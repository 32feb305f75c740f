package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// writeHooks writes a hooks file and returns its path.
func writeHooks(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hooks.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// putRaw writes a registry entry as it is, valid or not, as the nats CLI
// would.
func putRaw(t *testing.T, nc *nats.Conn, key, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, "hookbus_hooks")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, key, []byte(value)); err != nil {
		t.Fatal(err)
	}
}

const hooksYAML = `hooks:
  - stage: tool.before
    plugin: guard
    order: -5
    timeout: 2s
    policy: fail
    mode: validate
    tools: bash|fs_*
    agents: ops-*
  - stage: tool.after
    plugin: pii
    kinds: file.read|web.fetch
  - stage: context.assembled
    plugin: rewriter
grants: [rewriter]
`

// apply makes the registry match a file, --dry-run only says how; export
// writes the registry back in the file's format, and applying it changes
// nothing.
func TestHooksApplyAndExport(t *testing.T) {
	srv, nc := bustest.Start(t, bustest.WithListener())
	b := bustest.Provision(t, nc)
	c := &hooksCLI{t: t, url: srv.ClientURL()}
	r := remote.NewRegistry(b)
	file := writeHooks(t, hooksYAML)

	out := c.ok("apply", "-f", file, "--dry-run")
	for _, want := range []string{
		"+ grant rewriter privileged_hooks\n",
		"+ guard on tool.before (order -5, timeout 2s, policy fail, mode validate, tools bash|fs_*, agents ops-*)\n",
		"+ pii on tool.after (order 0, timeout 5s, policy ignore, mode mutate, tools * (kinds file.read|web.fetch), agents *)\n",
		"+ rewriter on context.assembled",
		"4 to add, 0 to change, 0 to remove, 0 unchanged (dry run: nothing was changed)\n",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("apply --dry-run lacks %q:\n%s", want, out)
		}
	}
	if regs, err := r.List(context.Background()); err != nil || len(regs) != 0 {
		t.Fatalf("a dry run changed the registry: %v %v", regs, err)
	}

	if out := c.ok("apply", "-f", file); !strings.Contains(out, "4 added, 0 changed, 0 removed, 0 unchanged\n") {
		t.Fatalf("apply:\n%s", out)
	}
	regs, err := r.List(context.Background())
	if err != nil || len(regs) != 3 {
		t.Fatalf("after apply: %v %v", regs, err)
	}
	if pii, err := r.Get(context.Background(), "tool.after", "pii"); err != nil || pii.Kinds != "file.read|web.fetch" {
		t.Fatalf("pii as applied: %+v %v", pii, err)
	}
	guard, err := r.Get(context.Background(), "tool.before", "guard")
	if err != nil || guard.Order != -5 || guard.Timeout != 2*time.Second || guard.Policy != interceptors.PolicyFail || guard.Tools != "bash|fs_*" {
		t.Fatalf("guard as applied: %+v %v", guard, err)
	}

	// export, then apply of the export: nothing changes.
	exported := c.ok("export")
	if !strings.Contains(exported, "plugin: guard") || !strings.Contains(exported, "- rewriter") {
		t.Fatalf("export:\n%s", exported)
	}
	if out := c.ok("apply", "-f", writeHooks(t, exported)); !strings.Contains(out, "0 added, 0 changed, 0 removed, 3 unchanged\n") {
		t.Fatalf("apply of the export:\n%s", out)
	}

	// A changed timeout, a registration and the grant gone.
	changed := strings.Replace(strings.Replace(hooksYAML, "timeout: 2s", "timeout: 3s", 1),
		"  - stage: context.assembled\n    plugin: rewriter\ngrants: [rewriter]\n", "grants: []\n", 1)
	out = c.ok("apply", "-f", writeHooks(t, changed))
	for _, want := range []string{
		"~ guard on tool.before: timeout 2s -> 3s\n",
		"- rewriter on context.assembled",
		"- revoke privileged_hooks of rewriter\n",
		"0 added, 1 changed, 2 removed, 1 unchanged\n",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("apply of the changed file lacks %q:\n%s", want, out)
		}
	}
	if g, _ := r.Granted(context.Background()); len(g) != 0 {
		t.Fatalf("grants after apply: %v", g)
	}
	// Without a grants list, grants are left alone.
	c.ok("grant", "rewriter")
	if out := c.ok("apply", "-f", writeHooks(t, "hooks: []\n")); strings.Contains(out, "revoke") {
		t.Fatalf("a file without grants revoked one:\n%s", out)
	}
	if g, _ := r.Granted(context.Background()); len(g) != 1 {
		t.Fatalf("grants after apply without a grants list: %v", g)
	}
}

// A file that is wrong is refused whole, naming the entry, before anything
// changes.
func TestHooksApplyRefusesBadFiles(t *testing.T) {
	srv, nc := bustest.Start(t, bustest.WithListener())
	b := bustest.Provision(t, nc)
	c := &hooksCLI{t: t, url: srv.ClientURL()}
	for _, tc := range []struct{ yaml, want string }{
		{"hooks:\n  - stage: tool.before\n    plugin: a\n  - stage: tool.nope\n    plugin: b\n", `hooks[2] (b on tool.nope): stage: hookbus: unknown stage: "tool.nope"`},
		{"hooks:\n  - stage: tool.before\n    plugin: a\n    timout: 2s\n", "field timout not found"},
		{"hooks:\n  - stage: tool.before\n    plugin: a\n  - stage: tool.before\n    plugin: a\n", "hooks[1] and hooks[2] both register a on tool.before"},
		{"hooks:\n  - stage: run.completed\n    plugin: a\n", "observe-only"},
		{"grants: [a, a]\n", "grants lists a twice"},
		{"hooks:\n  - stage: tool.before\n    plugin: a\n    kinds: bash\n", `"bash" is not a kind`},
	} {
		c.fails(exitUsage, tc.want, "apply", "-f", writeHooks(t, "hooks:\n  - stage: intake\n    plugin: first\n"+strings.TrimPrefix(tc.yaml, "hooks:\n")))
	}
	c.fails(exitUsage, "give the hooks file: -f FILE", "apply")
	if regs, err := remote.NewRegistry(b).List(context.Background()); err != nil || len(regs) != 0 {
		t.Fatalf("a refused file changed the registry: %v %v", regs, err)
	}
}

// hooks rm removes a registration that is not valid (every loop warns
// about it) without validating it first; list names such entries, and
// apply removes them.
func TestHooksRmInvalidEntry(t *testing.T) {
	srv, nc := bustest.Start(t, bustest.WithListener())
	b := bustest.Provision(t, nc)
	c := &hooksCLI{t: t, url: srv.ClientURL()}
	putRaw(t, nc, "run.completed.bad", `{"plugin":"bad","stage":"run.completed"}`)

	if out := c.ok("list"); !strings.Contains(out, "unreadable entry run.completed.bad (not called; observer hooks rm removes it)") {
		t.Fatalf("list does not name the invalid entry:\n%s", out)
	}
	if out := c.ok("rm", "--stage", "run.completed", "--plugin", "bad"); !strings.Contains(out, "removed bad from run.completed") {
		t.Fatalf("rm: %s", out)
	}
	bad, err := remote.NewRegistry(b).Unreadable(context.Background())
	if err != nil || len(bad) != 0 {
		t.Fatalf("after rm: %v %v", bad, err)
	}
	c.fails(cli.ExitFailure, "no registration of plugin bad on run.completed", "rm", "--stage", "run.completed", "--plugin", "bad")

	putRaw(t, nc, "tool.before.junk", `not json`)
	out := c.ok("apply", "-f", writeHooks(t, "hooks: []\n"))
	if !strings.Contains(out, "- entry tool.before.junk, which does not read") || !strings.Contains(out, "0 added, 0 changed, 1 removed") {
		t.Fatalf("apply of an empty file over an invalid entry:\n%s", out)
	}
}
