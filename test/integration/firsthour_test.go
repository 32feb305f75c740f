package integration

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
)

// repoRoot is the repository's root directory.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// make run, as a new user runs it (no key, no network): the trace shows the
// demo's in-process hook deciding (hook.decided with its patch) and its
// effect on the answer, the replay reads the store offline, and the output
// says where a remote hook plugs in.
func TestMakeRunShowsAHook(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	dir := t.TempDir()
	cmd := exec.Command("make", "--no-print-directory", "run", "BIN="+filepath.Join(dir, "bin"), "STORE="+filepath.Join(dir, "store"), "LISTEN=none")
	cmd.Dir = repoRoot()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make run: %v\n%s", err, out)
	}
	s := string(out)
	for _, want := range []string{
		"hook.decided       demo-redactor tool.after modify",             // the trace: the hook decided
		`"op":"replace","path":"/result/content"`,                        // with its patch
		"tool.result        clock → ",                                    // the raw result, kept for auditors
		"It is 20",                                                       // the answer...
		"(time of day redacted by the demo-redactor hook), and 6*7 = 42", // ...shows the effect
		"observer replay",
		"18 events", // the replay, offline
		"a remote hook plugs in", "loop server", "observer hooks add", "Three terminals",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("make run output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("make run output:\n%s", s)
	}
}

// The README's three terminals: a long-lived server (loop server), an
// interceptor in another process registered on it, and a run attached with
// --nats whose trace shows the hook's decision and whose answer shows its
// effect.
func TestThreeTerminals(t *testing.T) {
	addr := freeAddr(t)
	url := "nats://" + addr
	store := filepath.Join(t.TempDir(), "store")
	_, srvOut := start(t, "loop", "server", "--store", store, "--listen", addr)
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(srvOut.String(), "listening on "+url) }, "loop server: %s", srvOut)
	if !strings.Contains(srvOut.String(), "attach with --nats "+url) {
		t.Fatalf("loop server does not say how to attach: %s", srvOut)
	}

	// Terminal 2: the interceptor, and its registration.
	startInterceptor(t, url, "policy", "deny-calculator")
	if add := run(t, "observer", "hooks", "add", "--nats", url, "--stage", "tool.before", "--plugin", "policy", "--tools", "calculator"); add.code != 0 {
		t.Fatalf("hooks add: %d %s", add.code, add.stderr)
	}

	// Terminal 3: a run attached to the server.
	r := run(t, "loop", "run", "--nats", url, "--session", "t3", "--trace", "what is 6*7?")
	if r.code != 0 || !strings.Contains(r.stdout, "forbids calculator") || strings.Contains(r.stdout, "= 42") {
		t.Fatalf("loop run --nats: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "hook.decided       policy tool.before deny: pid ") {
		t.Fatalf("the trace lacks the remote hook's decision:\n%s", r.stderr)
	}

	// The runs and the registry live in the server's store: an observer
	// reads them, and a second embedded server cannot take its place.
	rep := run(t, "observer", "replay", "--nats", url, "--session", "t3", "--stage", "hook.decided", "--json")
	if d := payloads[events.HookDecided](t, jsonEvents(t, rep.stdout), events.StageHookDecided); len(d) != 1 || !d[0].Remote || d[0].Plugin != "policy" {
		t.Fatalf("replay of the decision: %+v %s", d, rep.stderr)
	}
	// A run whose embedded server finds the address held by the server
	// attaches to it, as observer does, and says so.
	busy := run(t, "loop", "run", "--store", filepath.Join(t.TempDir(), "other"), "--listen", addr, "--session", "attached", "hi")
	if busy.code != 0 || !strings.Contains(busy.stderr, "loop run: bus "+url+" (a server already listens on "+addr+": attached to it instead of starting one on --store ") {
		t.Fatalf("loop run on the server's address: %d %s", busy.code, busy.stderr)
	}
	if rep := run(t, "observer", "replay", "--nats", url, "--session", "attached", "--stage", "run.completed"); rep.code != 0 || !strings.Contains(rep.stderr, "1 events") {
		t.Fatalf("the attached run is not on the server: %d %s %s", rep.code, rep.stdout, rep.stderr)
	}
	locked := run(t, "observer", "replay", "--store", store)
	if locked.code != 1 || !strings.Contains(locked.stderr, "attach to that server with --nats URL") {
		t.Fatalf("observer replay on the server's store: %d %s", locked.code, locked.stderr)
	}
	if bad := run(t, "loop", "server", "--listen", "none"); bad.code != 2 {
		t.Fatalf("loop server --listen none: %d %s", bad.code, bad.stderr)
	}
	if bad := run(t, "loop", "server", "--nats", url); bad.code != 2 || !strings.Contains(bad.stderr, "-nats") {
		t.Fatalf("loop server --nats: %d %s", bad.code, bad.stderr)
	}
}

// The rule of the default bus is wired into the observer commands that
// use it, and their help says so. (Whether 127.0.0.1:4222 is free is not
// the test's to choose, so the rule's two cases are proved in
// cmd/internal/cli, TestDefaultServerElseStore, on addresses the test owns; the
// help text is derived from the same ConnFlags setting.)
func TestObserverStatesTheDefaultRule(t *testing.T) {
	for _, c := range [][]string{{"replay", "--help"}, {"hooks", "list", "--help"}, {"provision", "--help"}} {
		h := run(t, "observer", c...)
		if !strings.Contains(h.stdout, "else ./.hookbus when it exists") {
			t.Errorf("observer %v help does not state the rule:\n%s", c, h.stdout)
		}
	}
	if h := run(t, "observer", "tail", "--help"); strings.Contains(h.stdout, ".hookbus when it exists") {
		t.Errorf("observer tail claims the store fallback:\n%s", h.stdout)
	}
	if h := run(t, "observer", "--help"); !strings.Contains(h.stdout, "When nothing listens there, replay, sessions, runs, show,\nstats, verify, approvals, hooks and provision open ./.hookbus") {
		t.Errorf("observer --help does not state the rule:\n%s", h.stdout)
	}
}
