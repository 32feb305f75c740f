package main

import (
	"bytes"
	"context"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// hooksCLI runs "observer hooks ..." in-process against a server.
type hooksCLI struct {
	t   *testing.T
	url string
}

func (c *hooksCLI) run(args ...string) (code int, stdout, stderr string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	code = run(ctx, append(append([]string{"hooks"}, args...), "--nats", c.url), &out, &errOut)
	return code, out.String(), errOut.String()
}

// ok runs a command that must succeed and returns its stdout.
func (c *hooksCLI) ok(args ...string) string {
	c.t.Helper()
	code, out, errOut := c.run(args...)
	if code != exitOK {
		c.t.Fatalf("observer hooks %s: exit %d, stderr:\n%s", strings.Join(args, " "), code, errOut)
	}
	return out
}

// fails runs a command that must exit with code and say want on stderr.
func (c *hooksCLI) fails(code int, want string, args ...string) {
	c.t.Helper()
	got, _, errOut := c.run(args...)
	if got != code || !strings.Contains(errOut, want) {
		c.t.Fatalf("observer hooks %s: exit %d, stderr %q; want exit %d saying %q", strings.Join(args, " "), got, errOut, code, want)
	}
}

// rows returns the table rows of "hooks list", as fields, by plugin and
// stage.
func rows(t *testing.T, list string) map[string][]string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(list), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "STAGE") {
		t.Fatalf("list output:\n%s", list)
	}
	out := map[string][]string{}
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "privileged_hooks") || strings.HasPrefix(l, "disabled:") {
			continue
		}
		f := strings.Fields(l)
		out[f[0]+"."+f[2]] = f
	}
	return out
}

func TestHooksCLI(t *testing.T) {
	srv, nc := bustest.Start(t, bustest.WithListener())
	c := &hooksCLI{t: t, url: srv.ClientURL()}
	c.fails(cli.ExitFailure, "key-value bucket hookbus_hooks does not exist (provision the bus first)", "list")
	// An observer does not provision a server: an operator does.
	c.fails(cli.ExitFailure, "does not exist (provision the bus first)", "add", "--stage", "tool.after", "--plugin", "pii")
	b := bustest.Provision(t, nc)

	if out := c.ok("list"); !strings.Contains(out, "no interceptors registered") || !strings.Contains(out, "granted to: nobody") {
		t.Fatalf("empty list:\n%s", out)
	}
	out := c.ok("add", "--stage", "tool.before", "--plugin", "guard", "--order", "-5", "--timeout", "2s",
		"--policy", "fail", "--mode", "validate", "--tools", "bash|fs_*", "--agents", "ops-*")
	if !strings.Contains(out, "registered guard on tool.before (order -5, timeout 2s, policy fail, mode validate, tools bash|fs_*, agents ops-*)") {
		t.Fatalf("add output %q", out)
	}
	c.ok("add", "--stage", "tool.after", "--plugin", "pii")

	// Privileged stages need a grant first.
	c.fails(cli.ExitFailure, "plugin rewriter lacks privileged_hooks permission for stage context.assembled",
		"add", "--stage", "context.assembled", "--plugin", "rewriter")
	if out := c.ok("grant", "rewriter"); !strings.Contains(out, "granted rewriter privileged_hooks") {
		t.Fatalf("grant output %q", out)
	}
	c.ok("add", "--plugin", "rewriter", "--stage", "context.assembled")

	list := c.ok("list")
	r := rows(t, list)
	want := map[string]string{
		"tool.before.guard":          "tool.before -5 guard 2s fail validate bash|fs_* ops-* no enabled",
		"tool.after.pii":             "tool.after 0 pii 5s ignore mutate * * no enabled",
		"context.assembled.rewriter": "context.assembled 0 rewriter 5s ignore mutate * * yes (granted) enabled",
	}
	if len(r) != len(want) {
		t.Fatalf("list has %d rows, want %d:\n%s", len(r), len(want), list)
	}
	for key, w := range want {
		if got := strings.Join(r[key], " "); got != w {
			t.Errorf("row %s: %q, want %q", key, got, w)
		}
	}
	if !strings.Contains(list, "privileged_hooks granted to: rewriter") {
		t.Errorf("list does not show the grant:\n%s", list)
	}
	// Rows come in run order: context.assembled before tool.before before tool.after.
	if i, j, k := strings.Index(list, "context.assembled"), strings.Index(list, "tool.before"), strings.Index(list, "tool.after"); !(i < j && j < k) {
		t.Errorf("rows not in stage order:\n%s", list)
	}

	// The kill switch: disable marks every registration of the plugin,
	// says who and why, and enable undoes it.
	if out := c.ok("disable", "pii", "--by", "alice", "--reason", "leaks"); !strings.Contains(out, "disabled pii everywhere") {
		t.Fatalf("disable output %q", out)
	}
	list = c.ok("list")
	if got := strings.Join(rows(t, list)["tool.after.pii"], " "); !strings.HasSuffix(got, " DISABLED") {
		t.Fatalf("after disable, row %q", got)
	}
	// Who disabled it is who the server says the connection is (anonymous
	// on the embedded server); the name typed is only a note.
	if !strings.Contains(list, `disabled: pii by anonymous (cli) [note: declared "alice"] at `) || !strings.Contains(list, ": leaks") {
		t.Fatalf("list does not say who disabled pii:\n%s", list)
	}
	if d, err := remote.NewRegistry(b).DisabledPlugins(context.Background()); err != nil || d["pii"].By != "anonymous" || d["pii"].DeclaredBy != "alice" || d["pii"].Reason != "leaks" {
		t.Fatalf("registry kill switch: %+v %v", d, err)
	}
	if out := c.ok("enable", "pii"); !strings.Contains(out, "enabled pii") {
		t.Fatalf("enable output %q", out)
	}
	c.fails(cli.ExitFailure, "plugin pii is not disabled", "enable", "pii")
	c.fails(exitUsage, "disable takes one plugin id", "disable")
	if got := strings.Join(rows(t, c.ok("list"))["tool.after.pii"], " "); !strings.HasSuffix(got, " enabled") {
		t.Fatalf("after enable, row %q", got)
	}

	// Revoking keeps the entry, marked as not called.
	c.ok("revoke", "rewriter")
	if got := strings.Join(rows(t, c.ok("list"))["context.assembled.rewriter"], " "); !strings.Contains(got, "NOT granted") {
		t.Fatalf("after revoke, row %q", got)
	}
	c.fails(cli.ExitFailure, "plugin rewriter has no grant", "revoke", "rewriter")

	// What the CLI wrote is what the bus reads.
	reg, err := remote.NewRegistry(b).Get(context.Background(), events.StageToolBefore, "guard")
	if err != nil {
		t.Fatal(err)
	}
	if reg != (interceptors.Registration{Plugin: "guard", Stage: events.StageToolBefore, Order: -5, Timeout: 2 * time.Second,
		Policy: interceptors.PolicyFail, Mode: interceptors.ModeValidate, Tools: "bash|fs_*", Agents: "ops-*"}) {
		t.Fatalf("registry holds %+v", reg)
	}

	if out := c.ok("rm", "--stage", "tool.before", "--plugin", "guard"); !strings.Contains(out, "removed guard from tool.before") {
		t.Fatalf("rm output %q", out)
	}
	c.fails(cli.ExitFailure, "no registration of plugin guard on tool.before", "rm", "--stage", "tool.before", "--plugin", "guard")
	if _, ok := rows(t, c.ok("list"))["tool.before.guard"]; ok {
		t.Fatal("guard still listed after rm")
	}
}

func TestHooksCLIErrors(t *testing.T) {
	srv, nc := bustest.Start(t, bustest.WithListener())
	bustest.Provision(t, nc)
	c := &hooksCLI{t: t, url: srv.ClientURL()}
	for _, tc := range []struct {
		code int
		want string
		args []string
	}{
		{exitUsage, `--stage: hookbus: unknown stage: "tool.nope"`, []string{"add", "--stage", "tool.nope", "--plugin", "p"}},
		{exitUsage, `plugin id "a.b"`, []string{"add", "--stage", "intake", "--plugin", "a.b"}},
		{exitUsage, "--stage and --plugin are required", []string{"add", "--plugin", "p"}},
		{exitUsage, `--timeout "soon" is not a duration`, []string{"add", "--stage", "intake", "--plugin", "p", "--timeout", "soon"}},
		{exitUsage, "grant takes one plugin id", []string{"grant"}},
		{exitUsage, `unknown subcommand "frob"`, []string{"frob"}},
		{exitUsage, `unexpected argument "extra"`, []string{"list", "extra"}},
		// Every mistake in the command line is a usage error (exit 2),
		// whether the CLI or the registry finds it.
		{exitUsage, "observe-only", []string{"add", "--stage", "run.completed", "--plugin", "p"}},
		{exitUsage, `plugin id "pii@v2" cannot be a registry key`, []string{"add", "--stage", "intake", "--plugin", "pii@v2"}},
		{exitUsage, `plugin id "café" cannot be a registry key`, []string{"add", "--stage", "intake", "--plugin", "café"}},
		{exitUsage, `plugin id "café" cannot be a registry key`, []string{"grant", "café"}},
		{exitUsage, `plugin id "caf\u200be"`, []string{"grant", "caf\u200be"}},
		{exitUsage, "exceeds the 30s cap", []string{"add", "--stage", "intake", "--plugin", "p", "--timeout", "1m"}},
		{exitUsage, "--timeout 0s: give a positive duration", []string{"add", "--stage", "intake", "--plugin", "p", "--timeout", "0s"}},
		{exitUsage, "--timeout -1s: give a positive duration", []string{"add", "--stage", "intake", "--plugin", "p", "--timeout", "-1s"}},
		{exitUsage, `policy "maybe"`, []string{"add", "--stage", "intake", "--plugin", "p", "--policy", "maybe"}},
		{exitUsage, `mode "foo"`, []string{"add", "--stage", "intake", "--plugin", "p", "--mode", "foo"}},
		{exitUsage, "tools matcher", []string{"add", "--stage", "intake", "--plugin", "p", "--tools", "bash"}},
		// What depends on the bus' state is a failure (exit 1).
		{cli.ExitFailure, "model.responded", []string{"add", "--stage", "model.responded", "--plugin", "p"}},
		{cli.ExitFailure, "no registration of plugin q on intake", []string{"rm", "--stage", "intake", "--plugin", "q"}},
	} {
		c.fails(tc.code, tc.want, tc.args...)
	}
	if out := c.ok("list"); !strings.Contains(out, "no interceptors registered") {
		t.Fatalf("a refused add was stored:\n%s", out)
	}
	// No server: a clear connection error, exit 1.
	bad := &hooksCLI{t: t, url: "nats://127.0.0.1:1"}
	if code, _, errOut := bad.run("list"); code != cli.ExitFailure || errOut == "" {
		t.Fatalf("list without a server: exit %d, stderr %q", code, errOut)
	}
}
