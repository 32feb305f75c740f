package policy_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/policy"
)

// Memory answers from the calls recorded before the event decided on:
// counts by kind within a window, and whether a call matched a pattern.
func TestMemory(t *testing.T) {
	ctx := context.Background()
	mem := policy.NewMemory()
	t0 := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	at := func(ev *events.Event, d time.Duration) *events.Event { ev.Time = t0.Add(d); return ev }
	calls := []*events.Event{
		at(toolBefore(t, events.HarnessClaude, "a", "s1", "Bash", `{"command":"ls"}`), 0),
		at(toolBefore(t, events.HarnessClaude, "a", "s1", "Read", `{"file_path":"/w/.env"}`), time.Minute),
		at(toolBefore(t, events.HarnessClaude, "a", "s1", "Bash", `{"command":"make"}`), 30*time.Minute),
		at(toolBefore(t, events.HarnessClaude, "a", "s1", "WebFetch", `{"url":"https://x.example"}`), 90*time.Minute),
		at(toolBefore(t, events.HarnessClaude, "a", "s2", "Bash", `{"command":"ls"}`), 90*time.Minute),
	}
	for _, ev := range calls {
		mem.Record(ev)
	}
	mem.Record(calls[0]) // recorded twice: counted once
	now := at(toolBefore(t, events.HarnessClaude, "a", "s1", "Bash", `{"command":"pwd"}`), 2*time.Hour)
	scope := policy.Scope{Agent: "a", Session: "s1", Event: now}
	for _, tc := range []struct {
		kinds  string
		window time.Duration
		want   int64
	}{
		{"shell", 3 * time.Hour, 2},
		{"shell", time.Hour, 0},
		{"shell", 2 * time.Hour, 2},
		{"file.*", 3 * time.Hour, 1},
		{"shell|web.fetch", 3 * time.Hour, 3},
		{"web.*", time.Hour, 1},
		{"mcp", 3 * time.Hour, 0},
	} {
		n, err := mem.SessionCount(ctx, scope, tc.kinds, tc.window)
		if err != nil || n != tc.want {
			t.Errorf("count(%q, %s) = %d, %v; want %d", tc.kinds, tc.window, n, err, tc.want)
		}
	}
	for _, tc := range []struct {
		kinds, pattern string
		want           bool
	}{
		{"file.read", `(^|/)\.env$`, true},
		{"shell", `(^|/)\.env$`, false},
		{"shell", `^make$`, true},
		{"web.fetch", `x\.example`, true},
		{"file.*", `/\.ssh/`, false},
	} {
		ok, err := mem.SessionSeen(ctx, scope, tc.kinds, tc.pattern)
		if err != nil || ok != tc.want {
			t.Errorf("seen(%q, %q) = %v, %v; want %v", tc.kinds, tc.pattern, ok, err, tc.want)
		}
	}
	// Asked about an event recorded earlier, only what came before it
	// counts.
	early := policy.Scope{Agent: "a", Session: "s1", Event: calls[2]}
	if ok, _ := mem.SessionSeen(ctx, early, "web.fetch", "x"); ok {
		t.Error("seen a call recorded after the event")
	}
	if n, _ := mem.SessionCount(ctx, early, "shell", 24*time.Hour); n != 1 {
		t.Errorf("count before the 3rd call = %d, want 1", n)
	}
	if _, err := mem.SessionSeen(ctx, scope, "file.read", "("); err == nil {
		t.Error("a bad pattern gave no error")
	}
	if _, err := mem.SessionCount(ctx, scope, "re:x", time.Hour); err == nil {
		t.Error("bad kinds gave no error")
	}
}

// A counter's window forgets what is older than it.
func TestMemoryCounter(t *testing.T) {
	ctx := context.Background()
	mem := policy.NewMemory()
	k := policy.CounterKey{Policy: "p", Counter: "c", Key: "a", Window: time.Hour}
	for range 3 {
		if err := mem.Add(ctx, k, 2.5); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := mem.Counter(ctx, k); n != 7.5 {
		t.Errorf("sum = %v, want 7.5", n)
	}
	other := k
	other.Key = "b"
	if n, _ := mem.Counter(ctx, other); n != 0 {
		t.Errorf("another key's sum = %v, want 0", n)
	}
}

// A temporal rule in a policy: no web fetch after reading .env.
func TestTemporalRule(t *testing.T) {
	mem := policy.NewMemory()
	c := compile(t, temporal, policy.WithHistory(mem))
	fetch := toolBefore(t, events.HarnessClaude, "a", "s1", "WebFetch", `{"url":"https://x.example"}`)
	mem.Record(fetch)
	if res := evaluate(t, c, fetch); res.Decision.Kind != "allow" {
		t.Fatalf("before reading .env: %+v", res.Decision)
	}
	mem.Record(toolBefore(t, events.HarnessClaude, "a", "s1", "Read", `{"file_path":"/w/.env"}`))
	fetch2 := toolBefore(t, events.HarnessClaude, "a", "s1", "WebFetch", `{"url":"https://x.example"}`)
	mem.Record(fetch2)
	if res := evaluate(t, c, fetch2); res.Decision.Kind != "deny" {
		t.Fatalf("after reading .env: %+v", res.Decision)
	}
	// The first fetch, decided again (a replay), still came before.
	if res := evaluate(t, c, fetch); res.Decision.Kind != "allow" {
		t.Fatalf("the earlier fetch replayed: %+v", res.Decision)
	}
	if res := evaluate(t, c, toolBefore(t, events.HarnessClaude, "a", "s2", "WebFetch", `{"url":"https://x.example"}`)); res.Decision.Kind != "allow" {
		t.Fatalf("another session: %+v", res.Decision)
	}
}
