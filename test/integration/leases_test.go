package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
)

// liveness bounds how long a dead plugin or worker may still count as
// live: its lease or presence lapses within bus.LeaseTTL (4 s); the rest is
// slack for a loaded machine.
const liveness = 10 * time.Second

// startLeasedInterceptor starts an interceptor process that registers
// itself on tool.before for tools, with a lease.
func startLeasedInterceptor(t *testing.T, url, plugin, tools string) (*exec.Cmd, *bustest.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envInterceptor+"=deny-calculator", envNATS+"="+url, envPlugin+"="+plugin, envLease+"="+tools)
	var out bustest.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(out.String(), "serving") }, "the interceptor process to serve: %s", &out)
	return cmd, &out
}

// leaseStates reads observer hooks list --output json: the registrations'
// keys and the leased ones' states.
func leaseStates(t *testing.T, url string) (keys []string, leased map[string]string) {
	t.Helper()
	r := run(t, "observer", "hooks", "list", "--nats", url, "--output", "json")
	if r.code != 0 {
		t.Fatalf("hooks list: %d %s", r.code, r.stderr)
	}
	var l struct {
		Hooks []struct {
			Stage, Plugin string
		} `json:"hooks"`
		Leased map[string]string `json:"leased"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &l); err != nil {
		t.Fatalf("hooks list --output json: %v\n%s", err, r.stdout)
	}
	for _, h := range l.Hooks {
		keys = append(keys, h.Stage+"."+h.Plugin)
	}
	return keys, l.Leased
}

// A plugin that registers itself with a lease is called while it lives.
// SIGKILLed, it is no longer called within seconds (no hook.failed per
// run), lists as gone, and observer hooks prune removes it; a plugin
// stopped cleanly removes its registration itself; a registration made as
// code (hooks apply -f) stays through all of it.
func TestLeasedPluginRegistrations(t *testing.T) {
	addr := freeAddr(t)
	url := "nats://" + addr
	_, srvOut := start(t, "loop", "server", "--store", filepath.Join(t.TempDir(), "store"), "--listen", addr)
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(srvOut.String(), "listening on "+url) }, "loop server: %s", srvOut)

	file := filepath.Join(t.TempDir(), "hooks.yaml")
	if err := os.WriteFile(file, []byte("hooks:\n  - stage: tool.before\n    plugin: coded\n    tools: never_called\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := run(t, "observer", "hooks", "apply", "--nats", url, "-f", file); r.code != 0 {
		t.Fatalf("hooks apply: %d %s %s", r.code, r.stdout, r.stderr)
	}

	// Live: called.
	guard, _ := startLeasedInterceptor(t, url, "guard", "calculator")
	if _, leased := leaseStates(t, url); leased["tool.before.guard"] != "live" {
		t.Fatalf("leased registrations %v, want guard live", leased)
	}
	r := run(t, "loop", "run", "--nats", url, "--session", "live", "--trace", "what is 6*7?")
	if r.code != 0 || !strings.Contains(r.stdout, "forbids calculator") {
		t.Fatalf("a run with guard live: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// Applying the file again leaves the plugin's registration alone.
	if r := run(t, "observer", "hooks", "apply", "--nats", url, "-f", file); r.code != 0 || strings.Contains(r.stdout, "guard") {
		t.Fatalf("hooks apply with guard live: %d %s %s", r.code, r.stdout, r.stderr)
	}

	// SIGKILLed: gone within seconds.
	if err := guard.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = guard.Wait()
	waitFor(t, liveness, func() bool {
		_, leased := leaseStates(t, url)
		return leased["tool.before.guard"] == "gone"
	}, "guard to list as gone after SIGKILL")
	list := run(t, "observer", "hooks", "list", "--nats", url)
	if !strings.Contains(list.stdout, "GONE") {
		t.Fatalf("hooks list does not show guard gone:\n%s", list.stdout)
	}
	for _, session := range []string{"dead1", "dead2"} {
		r := run(t, "loop", "run", "--nats", url, "--session", session, "--trace", "what is 6*7?")
		if r.code != 0 || !strings.Contains(r.stdout, "= 42") || strings.Contains(r.stderr, "no_responders") || strings.Contains(r.stderr, "hook.failed") {
			t.Fatalf("a run after guard died: %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
	}
	prune := run(t, "observer", "hooks", "prune", "--nats", url)
	if prune.code != 0 || !strings.Contains(prune.stdout, "removed guard from tool.before") {
		t.Fatalf("hooks prune: %d %s %s", prune.code, prune.stdout, prune.stderr)
	}

	// Stopped cleanly: unregistered by itself.
	polite, politeOut := startLeasedInterceptor(t, url, "polite", "clock")
	if keys, _ := leaseStates(t, url); !strings.Contains(strings.Join(keys, " "), "tool.before.polite") {
		t.Fatalf("registrations %v, want polite", keys)
	}
	if err := polite.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := polite.Wait(); err != nil {
		t.Fatalf("polite did not stop cleanly: %v\n%s", err, politeOut)
	}
	keys, _ := leaseStates(t, url)
	if got := strings.Join(keys, " "); got != "tool.before.coded" {
		t.Fatalf("registrations after a clean stop and a prune: %q, want only the one made as code", got)
	}
}

// A SIGKILLed worker leaves the fleet within seconds: loop submit --wait
// says no worker serves the agent.
func TestKilledWorkerLeavesFleet(t *testing.T) {
	addr := freeAddr(t)
	url := "nats://" + addr
	_, srvOut := start(t, "loop", "server", "--store", filepath.Join(t.TempDir(), "store"), "--listen", addr)
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(srvOut.String(), "listening on "+url) }, "loop server: %s", srvOut)
	worker, out := start(t, "loop", "serve", "--nats", url)
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(out.String(), "taking runs") }, "the worker to start:\n%s", out)
	if err := worker.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = worker.Wait()
	// The worker's presence lapses while the submitter waits; it says so.
	r := run(t, "loop", "submit", "--nats", url, "--wait", "--timeout", liveness.String(), "hello")
	if !strings.Contains(r.stderr, "no worker serves agent demo") {
		t.Fatalf("loop submit --wait after the worker was killed: %d %s", r.code, r.stderr)
	}
}
