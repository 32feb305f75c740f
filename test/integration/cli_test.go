package integration

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/events"
)

// The demo run end to end: loop run on its embedded server, then the
// stream read back offline by observer replay.
func TestLoopRunThenOfflineReplay(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	r := run(t, "loop", "run", "--store", store, "--listen", "none", "--session", "s1", "what is 6*7?")
	if r.code != 0 || !strings.Contains(r.stdout, "6*7 = 42") {
		t.Fatalf("loop run: code %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "session s1") || !strings.Contains(r.stderr, "run ") {
		t.Fatalf("loop run stderr lacks the ids: %s", r.stderr)
	}
	rep := run(t, "observer", "replay", "--store", store, "--json")
	if rep.code != 0 {
		t.Fatalf("observer replay: %d %s", rep.code, rep.stderr)
	}
	evs := jsonEvents(t, rep.stdout)
	want := []events.Stage{
		events.StageIntake, events.StageRunStarted,
		events.StageStepStarted, events.StageContextAssembled, events.StageModelResponded,
		events.StageToolBefore, events.StageToolAfter, events.StageToolBefore, events.StageToolAfter, events.StageStepCompleted,
		events.StageStepStarted, events.StageContextAssembled, events.StageModelResponded, events.StageStepCompleted,
		events.StageStop, events.StageRunCompleted,
	}
	got := make([]events.Stage, len(evs))
	for i, e := range evs {
		got[i] = e.Stage
		if e.Seq != uint64(i+1) {
			t.Errorf("event %d seq %d", i, e.Seq)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("replayed stages\n got %v\nwant %v", got, want)
	}

	// The same session continues in a second run, rebuilt from the stream.
	r2 := run(t, "loop", "run", "--store", store, "--listen", "none", "--session", "s1", "and again?")
	if r2.code != 0 || !strings.Contains(r2.stdout, "(You asked: and again?)") {
		t.Fatalf("second run: %d %s %s", r2.code, r2.stdout, r2.stderr)
	}
	tl := run(t, "observer", "replay", "--store", store, "--session", "s1", "--stage", "run.started")
	if tl.code != 0 || !strings.Contains(tl.stdout, "history 5 messages") || !strings.Contains(tl.stderr, "2 events") {
		t.Fatalf("timeline of run.started: %d\n%s\n%s", tl.code, tl.stdout, tl.stderr)
	}
}

func TestBadIDsOnTheCLIWriteNothing(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	cases := [][]string{
		{"run", "--store", store, "--agent", "a.b", "hi"},
		{"run", "--store", store, "--session", "s*", "hi"},
		{"run", "--store", store, "--session", "has space", "hi"},
		{"run", "--store", store, "--agent", strings.Repeat("x", 129), "hi"},
	}
	for _, args := range cases {
		r := run(t, "loop", args...)
		if r.code != 2 || !strings.Contains(r.stderr, "invalid id") {
			t.Errorf("loop %v: code %d, stderr %q; want exit 2 naming the bad id", args, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Fatalf("a refused run created the store: %v", err)
	}
	r := run(t, "observer", "replay", "--store", store, "--agent", "a>b")
	if r.code != 2 || !strings.Contains(r.stderr, `agent id "a>b"`) {
		t.Fatalf("observer replay with a bad agent: %d %q", r.code, r.stderr)
	}
	r = run(t, "observer", "replay", "--store", store, "--stage", "onIntake")
	if r.code != 2 || !strings.Contains(r.stderr, "unknown stage") {
		t.Fatalf("observer replay with a bad stage: %d %q", r.code, r.stderr)
	}
}

func TestUsageAndHelp(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"loop", nil, 2, "Usage:"},
		{"loop", []string{"--help"}, 0, "loop run"},
		{"loop", []string{"run", "--help"}, 0, "PROMPT"},
		{"loop", []string{"run"}, 2, "no PROMPT"},
		{"loop", []string{"fly"}, 2, `unknown command "fly"`},
		{"loop", []string{"run", "--bogus", "x"}, 2, "bogus"},
		{"observer", nil, 2, "Usage:"},
		{"observer", []string{"replay", "--help"}, 0, "-session"},
		{"observer", []string{"replay", "--store", "x", "--nats", "nats://127.0.0.1:1"}, 2, "not both"},
	} {
		r := run(t, tc.name, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stdout+r.stderr, tc.want) {
			t.Errorf("%s %v: code %d (want %d), output lacks %q:\n%s%s", tc.name, tc.args, r.code, tc.code, tc.want, r.stdout, r.stderr)
		}
	}
}
