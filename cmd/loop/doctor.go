package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/events"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

const doctorLong = `Reads a coding agent's own settings where it reads them (user, project,
local, managed or system) and says which of its hook events reach hookbus
and which do not; whether it trusts the project (where it has trust, an
untrusted project's hooks do not run); whether the hooks fail closed; and
whether the bus and the gateway the hooks name answer, with the
credentials they are configured with, for the agent id they write as
(loop agent-hook's --nats, --creds, --config and --agent; an http hook's,
hookbus-hook's or the plugin's gateway URL and token). With --probe it
sends one synthetic SessionStart through the first hookbus hook, as the
agent would, and shows what the bus recorded of it.

Each line starts with ok, note or PROBLEM. It exits 0 when there is no
problem, 1 when there is one, 2 for a usage error. docs/DOCTOR.md.`

// doctorCmd is loop doctor: which of a coding agent's hooks reach
// hookbus, and whether they can.
func doctorCmd(a *cli.App) *cobra.Command {
	var names []string
	for _, r := range cliRows() {
		names = append(names, r.name)
	}
	return cli.NoArgsCommand("doctor --harness "+strings.Join(names, "|")+" [flags]", "Say which of a coding agent's hook events reach hookbus, and whether they can", doctorLong, func(fs *pflag.FlagSet) cli.Run {
		d := doctor{app: a}
		fs.StringVar(&d.harness, "harness", "", "the coding agent: "+strings.Join(names, ", "))
		fs.StringVar(&d.env.project, "project", "", "the project the agent runs in (default: the working directory)")
		fs.BoolVar(&d.probe, "probe", false, "send one synthetic SessionStart through the first hookbus hook and show its record")
		fs.DurationVar(&d.wait, "wait", 5*time.Second, "the longest wait for the bus, the gateway or the probe")
		d.conn = cli.ConnFlags{App: a, Quiet: true}
		d.conn.Register(fs)
		return func(ctx context.Context, _ []string) error {
			code, err := d.run(ctx, fs)
			a.Code = code
			return err
		}
	})
}

// doctor is one run of loop doctor.
type doctor struct {
	app     *cli.App
	harness string
	env     doctorEnv
	probe   bool
	wait    time.Duration
	conn    cli.ConnFlags // the bus the probe reads back when the hook names none

	out      io.Writer
	problems int
}

func (d *doctor) line(kind, format string, args ...any) {
	if kind == "PROBLEM" {
		d.problems++
	}
	fmt.Fprintf(d.out, "%-8s %s\n", kind, fmt.Sprintf(format, args...))
}

// found is one hookbus hook of the settings, and the events it takes.
type found struct {
	scope, file string
	entry       hookEntry
	events      []string
}

func (d *doctor) run(ctx context.Context, fs *pflag.FlagSet) (int, error) {
	d.out = d.app.Out
	i := slices.IndexFunc(cliRows(), func(r cliRow) bool { return r.name == d.harness })
	if i < 0 {
		var names []string
		for _, r := range cliRows() {
			names = append(names, r.name)
		}
		return exitUsage, fmt.Errorf("%w: --harness %q: give %s", cli.ErrUsage, d.harness, strings.Join(names, ", "))
	}
	row := cliRows()[i]
	if d.wait <= 0 {
		return exitUsage, fmt.Errorf("%w: --wait %s: give a positive duration", cli.ErrUsage, d.wait)
	}
	d.env.getenv = os.Getenv
	d.env.home = os.Getenv("HOME")
	if d.env.project == "" {
		d.env.project, _ = os.Getwd()
	}
	if p, err := filepath.Abs(d.env.project); err == nil {
		d.env.project = p
	}
	fmt.Fprintf(d.out, "loop doctor: %s in %s\n", row.title, d.env.project)

	hooks := d.settings(row)
	d.trust(row, hooks)
	d.failClosed(row, hooks)
	for _, h := range hooks {
		d.reach(ctx, row, h)
	}
	if d.probe {
		d.runProbe(ctx, row, hooks, fs)
	}
	if d.problems > 0 {
		fmt.Fprintf(d.out, "%d problem(s)\n", d.problems)
		return exitFailure, nil
	}
	fmt.Fprintln(d.out, "no problems")
	return 0, nil
}

// settings reads every file the CLI reads hooks from and says, event by
// event, which reach hookbus; it returns the hookbus hooks found.
func (d *doctor) settings(row cliRow) []found {
	var hooks []found
	hooked := map[string]string{} // event: the scope that hooks it
	for _, f := range row.files(d.env) {
		if row.plugin {
			if st, err := os.Stat(f.path); err != nil || st.IsDir() {
				d.line("note", "%s plugins %s: no plugin file", f.scope, f.path)
				continue
			}
			if !isHookbusPlugin(f.path) {
				d.line("note", "%s plugin %s: not hookbus' plugin", f.scope, f.path)
				continue
			}
			d.line("ok", "%s plugin %s: hookbus' plugin", f.scope, f.path)
			hooks = append(hooks, found{scope: f.scope, file: f.path, events: row.events})
			for _, ev := range row.events {
				hooked[ev] = f.scope
			}
			continue
		}
		table, err := row.readHooks(f.path)
		switch {
		case err != nil:
			d.line("PROBLEM", "%s settings %s: %v (%s reads none of its hooks)", f.scope, f.path, err, row.title)
			continue
		case table == nil:
			d.line("note", "%s settings %s: not there", f.scope, f.path)
			continue
		}
		n := 0
		for _, ev := range slices.Sorted(maps.Keys(table)) {
			if !slices.Contains(row.events, ev) {
				d.line("note", "%s settings %s: %s has no event %q", f.scope, f.path, row.title, ev)
			}
			for _, e := range table[ev] {
				if !e.isHookbus(cliRows()) {
					continue
				}
				n++
				if _, ok := hooked[ev]; !ok {
					hooked[ev] = f.scope
				}
				k := slices.IndexFunc(hooks, func(h found) bool { return h.entry.same(e) && h.file == f.path })
				if k < 0 {
					hooks = append(hooks, found{scope: f.scope, file: f.path, entry: e})
					k = len(hooks) - 1
				}
				hooks[k].events = append(hooks[k].events, ev)
			}
		}
		d.line("ok", "%s settings %s: %d hook(s) to hookbus", f.scope, f.path, n)
	}
	var missing []string
	for _, ev := range row.events {
		if scope, ok := hooked[ev]; ok {
			d.line("ok", "%s goes to hookbus (%s)", ev, scope)
		} else {
			missing = append(missing, ev)
		}
	}
	switch {
	case len(hooked) == 0:
		d.line("PROBLEM", "hooks missing: no %s event is hooked to hookbus (docs/CODING_AGENTS.md has the settings)", row.title)
	case len(missing) > 0:
		d.line("PROBLEM", "hooks missing: %d %s event(s) do not reach hookbus: %s", len(missing), row.title, strings.Join(missing, ", "))
	}
	return hooks
}

// same reports whether h and o are one hook (their headers aside).
func (h hookEntry) same(o hookEntry) bool {
	return h.Type == o.Type && h.Command == o.Command && h.URL == o.URL && h.OnFailure == o.OnFailure
}

// trust says whether the CLI trusts the project, where it has trust.
func (d *doctor) trust(row cliRow, hooks []found) {
	if row.note != "" {
		d.line("note", "%s", row.note)
	}
	st := row.trust(d.env)
	switch {
	case !st.applies:
		d.line("ok", "trust: %s has no project trust; its hooks run everywhere", row.title)
	case st.trusted:
		d.line("ok", "trust: the project is trusted (%s)", st.where)
	case !row.trustAll && !slices.ContainsFunc(hooks, func(h found) bool { return h.scope == "project" || h.scope == "local" }):
		d.line("note", "trust: the project is not trusted (%s); the hookbus hooks are not the project's, which %s runs anyway", st.where, row.title)
	case row.trustFlag != "":
		d.line("note", "trust: %s does not trust %s (%s): it runs none of its hooks there unless run with %s", row.title, d.env.project, st.where, row.trustFlag)
	default:
		d.line("PROBLEM", "project untrusted: %s does not trust %s (%s), and runs none of its hooks there", row.title, d.env.project, st.where)
	}
}

// failClosed says what each hookbus hook does when hookbus is away.
func (d *doctor) failClosed(row cliRow, hooks []found) {
	for _, h := range hooks {
		switch {
		case row.plugin && d.env.getenv("HOOKBUS_POLICY") == "fail":
			d.line("ok", "fail-closed: HOOKBUS_POLICY=fail: the plugin blocks tool calls and prompts when the gateway cannot answer")
		case row.plugin:
			d.line("note", "fail-open: HOOKBUS_POLICY is not fail: when the gateway cannot answer, the plugin lets everything through")
		case h.entry.OnFailure == "block" || strings.Contains(h.entry.Command, "--policy fail") || strings.Contains(h.entry.Command, "--policy=fail"):
			d.line("ok", "fail-closed: %s: blocks when hookbus cannot answer", h.describe())
		default:
			d.line("note", "fail-open: %s: when hookbus cannot answer, events proceed unchecked (give --policy fail, or onFailure \"block\" in Claude Code)", h.describe())
		}
	}
}

func (h found) describe() string {
	switch {
	case h.entry.Command != "":
		return "command " + h.entry.Command
	case h.entry.URL != "":
		return "http hook " + h.entry.URL
	}
	return "plugin " + h.file
}

// reach checks that what a hook names answers: the bus of loop
// agent-hook with its credentials, or the gateway of an http hook,
// hookbus-hook or the plugin with its token.
func (d *doctor) reach(ctx context.Context, row cliRow, h found) {
	if h.entry.Command != "" {
		if bin := commandBinary(h.entry.Command); bin != "" {
			if _, err := exec.LookPath(bin); err != nil {
				d.line("PROBLEM", "hook command missing: %s: %v", bin, err)
				return
			}
		}
	}
	if u, token, ok := d.gatewayOf(row, h); ok {
		d.checkGateway(ctx, u, token)
		return
	}
	f, agent, err := agentHookFlags(h.entry.Command)
	if err != nil {
		d.line("PROBLEM", "hook command %q: %v", h.entry.Command, err)
		return
	}
	agent = cmp.Or(agent, rowAgent(row))
	if err := events.ValidateID("agent", agent); err != nil {
		d.line("PROBLEM", "agent id: %v", err)
		return
	}
	f.conn.App, f.conn.Quiet = d.app, true
	cctx, cancel := context.WithTimeout(ctx, d.wait)
	defer cancel()
	c, err := f.conn.Open(cctx, "hookbus-doctor", slog.New(slog.DiscardHandler), cli.ReadOnly)
	if err != nil {
		d.line("PROBLEM", "bus down: the hook's bus does not answer with its credentials: %v", err)
		return
	}
	defer c.Close()
	d.line("ok", "bus: %s answers (agent %s)", c.Where, agent)
}

// rowAgent is the agent id the CLI's sessions are recorded under by
// default.
func rowAgent(row cliRow) string {
	if h, err := harnessOf(row.name, false); err == nil {
		return h.Agent()
	}
	return row.name
}

// gatewayOf returns the gateway URL and token a hook posts to: an http
// hook's, hookbus-hook's, the plugin's.
func (d *doctor) gatewayOf(row cliRow, h found) (*url.URL, string, bool) {
	var raw, token string
	switch {
	case row.plugin:
		raw, token = cmp.Or(d.env.getenv("HOOKBUS_GATEWAY_URL"), "http://127.0.0.1:9466"+row.route), d.env.getenv("HOOKBUS_GATEWAY_TOKEN")
	case h.entry.URL != "":
		raw = h.entry.URL
		token = strings.TrimPrefix(os.Expand(h.entry.Headers["Authorization"], d.env.getenv), "Bearer ")
	case strings.Contains(h.entry.Command, "hookbus-hook"):
		words := shellWords(h.entry.Command)
		token = d.env.getenv("HOOKBUS_GATEWAY_TOKEN")
		raw = d.env.getenv("HOOKBUS_GATEWAY_URL")
		for i, w := range words {
			switch {
			case strings.HasPrefix(w, "http://"):
				raw = w
			case w == "--token-file" && i+1 < len(words):
				b, _ := os.ReadFile(words[i+1])
				token = strings.TrimSpace(string(b))
			}
		}
	default:
		return nil, "", false
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		d.line("PROBLEM", "gateway URL %q is not a URL", raw)
		return nil, "", false
	}
	return u, token, true
}

// checkGateway posts an empty hook input to the gateway: 400 (the input
// refused after the token and the agent were accepted) means it answers.
func (d *doctor) checkGateway(ctx context.Context, u *url.URL, token string) {
	code, body, err := d.post(ctx, u, token, []byte("{}"))
	switch {
	case err != nil:
		d.line("PROBLEM", "gateway down: %s does not answer: %v", u.Redacted(), err)
	case code == http.StatusBadRequest || code == http.StatusOK:
		d.line("ok", "gateway: %s answers, the token and the agent accepted", u.Redacted())
	case code == http.StatusUnauthorized:
		d.line("PROBLEM", "bad token: %s refuses the hook's token (401): %s", u.Redacted(), body)
	case code == http.StatusForbidden:
		d.line("PROBLEM", "agent not allowed: %s: %s", u.Redacted(), body)
	case code == http.StatusNotFound || code == http.StatusMethodNotAllowed:
		d.line("PROBLEM", "gateway route: %s answers %d: is loop gateway's --harness given this CLI?", u.Redacted(), code)
	default:
		d.line("PROBLEM", "gateway: %s answers %d: %s", u.Redacted(), code, body)
	}
}

func (d *doctor) post(ctx context.Context, u *url.URL, token string, body []byte) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, d.wait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, strings.TrimSpace(string(b)), nil
}
