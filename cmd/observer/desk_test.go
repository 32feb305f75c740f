package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/audit/audittest"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the commands' output")

func TestMain(m *testing.M) {
	// Tables print local times: the goldens are in UTC. The zone is set
	// through TZ, by running the tests again in a process that has it,
	// because writing time.Local races with goroutines that packages'
	// init functions started (nats-server's process sampler).
	if os.Getenv("TZ") != "UTC" {
		cmd := exec.Command(os.Args[0], os.Args[1:]...)
		cmd.Env = append(os.Environ(), "TZ=UTC")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			os.Exit(exit.ExitCode())
		case err != nil:
			fmt.Fprintln(os.Stderr, "run the tests with TZ=UTC:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// deskStore publishes the recorded multi-run stream (audittest.Stream:
// patches, a mock, denials, a hook failing closed, approvals, sub-agents,
// compactions) on a server with a listener; it returns the server's URL
// and its store directory, and stop, which shuts the server down (the
// store can then be opened offline).
func deskStore(t *testing.T) (url, dir string, stop func()) {
	t.Helper()
	dir = t.TempDir()
	srv, nc := bustest.Start(t, bustest.WithListener(), bustest.WithStoreDir(dir))
	b := bustest.Provision(t, nc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, e := range audittest.Stream(t) {
		if err := b.PublishSync(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	return srv.ClientURL(), dir, srv.Shutdown
}

// observer runs the command in-process.
func observer(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	code = run(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// golden compares got with testdata/name.golden (-update rewrites it).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (write it: go test ./cmd/observer -run %s -update)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from %s (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", name, path, got, want)
	}
}

// deskCases are the goldens: each command on the recorded stream.
var deskCases = []struct {
	golden string
	args   []string
}{
	{"sessions", []string{"sessions"}},
	{"sessions-helper", []string{"sessions", "--agent", "helper"}},
	{"runs", []string{"runs"}},
	{"runs-denied", []string{"runs", "--reason", "denied"}},
	{"runs-subagent-session", []string{"runs", "--session", "subagent", "--since", "1h"}},
	{"runs-json", []string{"runs", "--agent", "helper", "--json"}},
	{"show-patches", []string{"show", "01KDYBK349A8…"}}, // a prefix as the tables show it
	{"show-denials", []string{"show", "01KDYCK359A800000000000011"}},
	{"show-approval", []string{"show", "01KDYDK349A8"}},
	{"show-subagent", []string{"show", "01KDYEK349A8"}},
	{"show-compaction", []string{"show", "01KDYFK35XA8"}},
	{"show-subagent-json", []string{"show", "--json", "01KDYEK349A8"}},
	{"stats", []string{"stats"}},
	{"stats-json", []string{"stats", "--json", "--agent", "demo"}},
}

func TestDeskGolden(t *testing.T) {
	url, dir, stop := deskStore(t)
	for _, tc := range deskCases {
		t.Run(tc.golden, func(t *testing.T) {
			code, out, errOut := observer(t, append(tc.args, "--nats", url)...)
			if code != exitOK {
				t.Fatalf("observer %s: exit %d, stderr:\n%s", strings.Join(tc.args, " "), code, errOut)
			}
			if !strings.Contains(errOut, "events read (the stream holds 254)") {
				t.Errorf("no final count on stderr: %q", errOut)
			}
			golden(t, tc.golden, out)
		})
	}
	// The same commands on the store directory, no server running on it.
	stop()
	for _, tc := range deskCases {
		t.Run("store/"+tc.golden, func(t *testing.T) {
			code, out, errOut := observer(t, append(tc.args, "--store", dir)...)
			if code != exitOK {
				t.Fatalf("observer %s --store: exit %d, stderr:\n%s", strings.Join(tc.args, " "), code, errOut)
			}
			if !*update {
				golden(t, tc.golden, out)
			}
		})
	}
}

func TestDeskMistakes(t *testing.T) {
	url, _, _ := deskStore(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"show", "01KDYCK3"}, exitUsage, `is ambiguous: 5 runs start with it`},
		{[]string{"show", "01ZZZ"}, 1, `no run id starts with "01ZZZ"`},
		{[]string{"show"}, exitUsage, "want one RUN"},
		{[]string{"show", "a", "b"}, exitUsage, "want one RUN"},
		{[]string{"show", "a.b"}, exitUsage, "invalid id"},
		{[]string{"show", "…"}, exitUsage, "holds no run id"},
		{[]string{"runs", "--reason", "nope"}, exitUsage, `--reason "nope" (known: done, denied`},
		{[]string{"runs", "--session", "a b"}, exitUsage, "invalid id"},
		{[]string{"runs", "--agent", "nobody"}, 1, "no runs match"},
		{[]string{"runs", "extra"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"sessions", "--since", "-1h"}, exitUsage, "--since -1h0m0s is negative"},
		{[]string{"sessions", "--since", "soon"}, exitUsage, "invalid value"},
		{[]string{"stats", "--bogus"}, exitUsage, "flag provided but not defined: -bogus"},
		{[]string{"stats", "--agent", "a*"}, exitUsage, "invalid id"},
	} {
		code, out, errOut := observer(t, append(tc.args, "--nats", url)...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("observer %s: exit %d, stderr %q; want exit %d saying %q", strings.Join(tc.args, " "), code, errOut, tc.code, tc.want)
		}
		if code == exitUsage && out != "" {
			t.Errorf("observer %s: a usage error wrote %q", strings.Join(tc.args, " "), out)
		}
	}
}

func TestProgress(t *testing.T) {
	var w bytes.Buffer
	p := &progress{w: &w, live: true, last: 4096}
	for i := 1; i <= 2000; i++ {
		p.saw(uint64(2 * i))
	}
	p.done(bus.ReplayStats{Events: 2000, Malformed: 1})
	got := w.String()
	// One update at the 1024th event (later ones are throttled), cleared,
	// then the count.
	want := "\rscanned 2048/4096 events (50%)\r\033[K2000 events read (the stream holds 4096), 1 malformed messages skipped\n"
	if got != want {
		t.Fatalf("progress wrote %q, want %q", got, want)
	}
	w.Reset()
	p = &progress{w: &w, last: 4096} // not a terminal: the count only
	for i := 1; i <= 2000; i++ {
		p.saw(uint64(i))
	}
	p.done(bus.ReplayStats{Events: 2000})
	if got := w.String(); got != "2000 events read (the stream holds 4096)\n" {
		t.Fatalf("progress without a terminal wrote %q", got)
	}
}
