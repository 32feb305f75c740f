package integration

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/nats-io/nats.go/jetstream"
)

// Every usage mistake exits 2, whichever check finds it; nothing is
// started or written for it.
func TestUsageMistakesExit2(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	if r := run(t, "loop", "run", "--store", store, "--listen", "none", "hi"); r.code != 0 {
		t.Fatalf("loop run: %d %s", r.code, r.stderr)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`[{"contnet": "hi"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(t.TempDir(), "fresh")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"loop", []string{"run", "--store", fresh, "--max-steps", "0", "hi"}, "--max-steps 0: a run takes at least 1 step"},
		{"loop", []string{"run", "--store", fresh, "--max-steps", "-3", "hi"}, "--max-steps -3"},
		{"loop", []string{"serve", "--store", fresh, "--max-steps", "0"}, "--max-steps 0"},
		{"loop", []string{"serve", "--store", fresh, "--agents", "ops,demo"}, `--agents "ops,demo" is not an agent definitions file (FILE.yaml); to serve agent ids with the agent the flags define, give --agent ops,demo`},
		{"loop", []string{"serve", "--store", fresh, "--agents", "ops.yaml", "--agent", "ops"}, "with --agents FILE the file names them"},
		{"loop", []string{"serve", "--store", fresh, "--agent", "a.b"}, `agent id "a.b" contains '.'`},
		{"loop", []string{"submit", "--max-steps", "0", "hi"}, "--max-steps 0: a run takes at least 1 step"},
		{"loop", []string{"submit", "--wait", "--timeout", "0s", "hi"}, "--timeout 0s: give a positive duration"},
		{"loop", []string{"submit", "--timeout", "1m", "hi"}, "give --wait too"},
		{"loop", []string{"run", "--store", fresh, "--script", bad, "hi"}, `reply 1: unknown field "contnet"`},
		{"loop", []string{"run", "--store", fresh, "--session", "s\u200b1", "hi"}, "invisible or unprintable character U+200B"},
		{"loop", []string{"run", "--store", fresh, "--agent", "a\xffb", "hi"}, "is not valid UTF-8"},
		{"loop", []string{"run", "--store", fresh, "what", "is", "-5"}, "arguments that start with - go after --"},
		{"loop", []string{"run", "--store", fresh, "--user", "u", "--password", "p", "hi"}, "credentials are for a server"},
		{"observer", []string{"hooks", "add", "--store", store, "--stage", "intake", "--plugin", "p", "--policy", "maybe"}, `policy "maybe"`},
		{"observer", []string{"hooks", "add", "--store", store, "--stage", "intake", "--plugin", "p", "--mode", "foo"}, `mode "foo"`},
		{"observer", []string{"hooks", "add", "--store", store, "--stage", "intake", "--plugin", "café"}, `plugin id "café" cannot be a registry key`},
		{"observer", []string{"hooks", "add", "--store", store, "--stage", "intake", "--plugin", "p", "--timeout", "0s"}, "--timeout 0s"},
		{"observer", []string{"provision", "--store", store, "--max-age", "-1h"}, "--max-age -1h0m0s is negative"},
		{"observer", []string{"provision", "--store", store, "--wait", "0s"}, "--wait 0s"},
		{"observer", []string{"replay", "--store", store, "--session", "s\u200b1"}, "U+200B"},
		{"observer", []string{"tail", "--store", store}, "tail follows a running server"},
	} {
		r := run(t, tc.name, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%s %q: exit %d, stderr %q; want exit 2 saying %q", tc.name, tc.args, r.code, r.stderr, tc.want)
		}
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Fatalf("a refused command created the store: %v", err)
	}
	if l := run(t, "observer", "hooks", "list", "--store", store); !strings.Contains(l.stdout, "no interceptors registered") {
		t.Fatalf("a refused add was stored: %s %s", l.stdout, l.stderr)
	}
}

// Flags may follow the prompt; "--" ends them; the prompt may come from
// stdin or a file.
func TestPromptsAndFlagsAfterThem(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	r := run(t, "loop", "run", "hello", "--session", "x", "--store", store, "--listen", "none")
	if r.code != 0 || !strings.Contains(r.stdout, "(You asked: hello)") || !strings.Contains(r.stderr, "session x ") {
		t.Fatalf("flags after the prompt: %d %s %s", r.code, r.stdout, r.stderr)
	}
	r = run(t, "loop", "run", "--store", store, "--listen", "none", "--", "is", "-5", "--session", "negative?")
	if r.code != 0 || !strings.Contains(r.stdout, "(You asked: is -5 --session negative?)") {
		t.Fatalf("words after --: %d %s %s", r.code, r.stdout, r.stderr)
	}
	r = runWith(t, runOpts{stdin: "a prompt\nfrom stdin\n"}, "loop", "run", "--store", store, "--listen", "none", "-")
	if r.code != 0 || !strings.Contains(r.stdout, "(You asked: a prompt\nfrom stdin)") {
		t.Fatalf("loop run -: %d %q %s", r.code, r.stdout, r.stderr)
	}
	file := filepath.Join(t.TempDir(), "p.txt")
	if err := os.WriteFile(file, []byte("from a file"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(t, "loop", "run", "--store", store, "--listen", "none", "--prompt-file", file)
	if r.code != 0 || !strings.Contains(r.stdout, "(You asked: from a file)") {
		t.Fatalf("--prompt-file: %d %s %s", r.code, r.stdout, r.stderr)
	}
}

// A prompt over the server's max payload: loop run claim-checks it like any
// large event, and so does loop submit (the run request), which a worker
// runs.
func TestOversizedPrompt(t *testing.T) {
	srv, _ := bustest.Start(t, bustest.WithListener())
	url := srv.ClientURL()
	file := filepath.Join(t.TempDir(), "big.txt")
	if err := os.WriteFile(file, []byte(strings.Repeat("lorem ipsum ", 150_000)), 0o600); err != nil { // 1.8 MB
		t.Fatal(err)
	}
	_, out := start(t, "loop", "serve", "--nats", url)
	bustest.Eventuallyf(t, 30*time.Second, func() bool { return strings.Contains(out.String(), "taking runs") }, "the worker to start:\n%s", out)
	r := run(t, "loop", "submit", "--nats", url, "--prompt-file", file, "--wait", "--timeout", "50s")
	if r.code != 0 || !strings.HasSuffix(strings.TrimSpace(r.stdout), "lorem ipsum)") {
		t.Fatalf("loop submit --wait of 1.8 MB: %d %.200s %s", r.code, r.stdout, r.stderr)
	}
	r = run(t, "loop", "run", "--nats", url, "--prompt-file", file)
	if r.code != 0 || !strings.HasSuffix(strings.TrimSpace(r.stdout), "lorem ipsum)") {
		t.Fatalf("loop run of 1.8 MB: %d %.200s %s", r.code, r.stdout, r.stderr)
	}
}

// The run ids the timeline shows are prefixes --run accepts; an ambiguous
// prefix, an unknown one and filters that match nothing say so.
func TestRunIDPrefixes(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	for _, p := range []string{"one", "two"} {
		if r := run(t, "loop", "run", "--store", store, "--listen", "none", "--session", "s1", p); r.code != 0 {
			t.Fatalf("loop run: %d %s", r.code, r.stderr)
		}
	}
	tl := run(t, "observer", "replay", "--store", store, "--stage", "run.completed")
	shown := regexp.MustCompile(` run (\S+…)  #`).FindAllStringSubmatch(tl.stdout, -1)
	if len(shown) != 2 || shown[0][1] == shown[1][1] {
		t.Fatalf("timeline:\n%s", tl.stdout)
	}
	// Copied from the timeline, ellipsis and all.
	r := run(t, "observer", "replay", "--store", store, "--run", shown[1][1])
	if r.code != 0 || !strings.Contains(r.stderr, "16 events") || !strings.Contains(r.stdout, `"two"`) || strings.Contains(r.stdout, `"one"`) {
		t.Fatalf("--run %s: %d\n%s%s", shown[1][1], r.code, r.stdout, r.stderr)
	}
	r = run(t, "observer", "replay", "--store", store, "--run", "0")
	if r.code != 2 || !strings.Contains(r.stderr, `--run "0" is ambiguous: 2 runs start with it`) {
		t.Fatalf("ambiguous --run: %d %s", r.code, r.stderr)
	}
	r = run(t, "observer", "replay", "--store", store, "--run", "7ZZZ")
	if r.code != 1 || !strings.Contains(r.stderr, `no run id starts with "7ZZZ"`) {
		t.Fatalf("unknown --run: %d %s", r.code, r.stderr)
	}
	r = run(t, "observer", "replay", "--store", store, "--session", "nope", "--stage", "intake")
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "no events match --session nope --stage intake") {
		t.Fatalf("a filter that matches nothing: %d %q %s", r.code, r.stdout, r.stderr)
	}
}

// replay and hooks add refuse a directory that holds no store alike, and
// leave it as it was.
func TestEmptyStoreRefusedAlike(t *testing.T) {
	empty := t.TempDir()
	rep := run(t, "observer", "replay", "--store", empty)
	add := run(t, "observer", "hooks", "add", "--store", empty, "--stage", "tool.before", "--plugin", "p")
	for _, r := range []result{rep, add} {
		if r.code != 1 || !strings.Contains(r.stderr, empty+" is not a hookbus store") {
			t.Errorf("exit %d, stderr %q; want exit 1 saying it is not a store", r.code, r.stderr)
		}
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Fatalf("the empty directory was written: %v", entries)
	}
}

// Agent and session ids holding '/' are quoted in the timeline, so
// agent/session reads one way.
func TestSlashInIDsIsUnambiguous(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	for _, ids := range [][2]string{{"a/b", "c"}, {"a", "b/c"}} {
		if r := run(t, "loop", "run", "--store", store, "--listen", "none", "--agent", ids[0], "--session", ids[1], "hi"); r.code != 0 {
			t.Fatalf("loop run %v: %d %s", ids, r.code, r.stderr)
		}
	}
	r := run(t, "observer", "replay", "--store", store, "--stage", "intake")
	if !strings.Contains(r.stdout, ` "a/b"/c run `) || !strings.Contains(r.stdout, ` a/"b/c" run `) {
		t.Fatalf("timeline:\n%s", r.stdout)
	}
}

// Warnings print without -v, as every command's help says; -v adds debug
// output.
func TestWarningsAndVerbose(t *testing.T) {
	for _, c := range [][]string{{"loop", "run"}, {"loop", "serve"}, {"loop", "submit"}, {"loop", "server"},
		{"observer", "replay"}, {"observer", "tail"}, {"observer", "provision"}, {"observer", "hooks", "list"}} {
		h := run(t, c[0], append(c[1:], "--help")...)
		if !strings.Contains(h.stdout, "also log debug output on stderr (warnings and errors always print)") {
			t.Errorf("%v: -v help:\n%s", c, h.stdout)
		}
	}
	srv, nc := bustest.Start(t, bustest.WithListener())
	bustest.Provision(t, nc)
	if err := nc.Publish("hookbus.evt.a.s.intake", []byte("not an event")); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	r := run(t, "observer", "replay", "--nats", srv.ClientURL())
	if !strings.Contains(r.stderr, "level=WARN") || !strings.Contains(r.stderr, "malformed event skipped") || strings.Contains(r.stderr, "level=DEBUG") {
		t.Fatalf("replay without -v: %s", r.stderr)
	}
}

// observer provision --max-age sets the retention of events and large
// payloads; provisioning again without it keeps what was set.
func TestProvisionMaxAge(t *testing.T) {
	srv, nc := bustest.Start(t, bustest.WithListener())
	url := srv.ClientURL()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	age := func() (events, payloads time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s, err := js.Stream(ctx, "HOOKBUS_EVENTS")
		if err != nil {
			t.Fatal(err)
		}
		o, err := js.ObjectStore(ctx, "hookbus_payloads")
		if err != nil {
			t.Fatal(err)
		}
		st, err := o.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s.CachedInfo().Config.MaxAge, st.TTL()
	}
	for _, step := range []struct {
		args []string
		want time.Duration
		says string
	}{
		{[]string{"--max-age", "720h"}, 720 * time.Hour, "events kept 720h0m0s"},
		{nil, 720 * time.Hour, "events kept 720h0m0s"},
		{[]string{"--replicas", "1"}, 720 * time.Hour, "events kept 720h0m0s"},
		{[]string{"--max-age", "0"}, 0, "events kept forever"},
	} {
		p := run(t, "observer", append([]string{"provision", "--nats", url}, step.args...)...)
		if p.code != 0 || !strings.Contains(p.stdout, step.says) {
			t.Fatalf("provision %v: %d %s %s", step.args, p.code, p.stdout, p.stderr)
		}
		if ev, pl := age(); ev != step.want || pl != step.want {
			t.Fatalf("after provision %v: events max age %v, payloads TTL %v; want %v", step.args, ev, pl, step.want)
		}
	}
}
