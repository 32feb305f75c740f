package history_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/history"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/policy"
)

var t0 = time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)

// all is a window that holds every call of the tests' sessions.
const all = 100 * 365 * 24 * time.Hour

func TestSessionAnswersAcrossRuns(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	r := newRecorder(b, "coder", "s1", t0)
	r.call(t, "r1", shell("ls"))
	r.other(t, "r1")
	r.call(t, "r1", read("/repo/.env"))
	mid := r.call(t, "r2", shell("make"))
	r.call(t, "r2", fetch("https://example.com/x"))
	r.other(t, "r3")
	r.call(t, "r3", shell("go test"))
	r.call(t, "r3", events.Action{Kind: events.KindFileEdit, Paths: []string{"main.go"}})
	// Another session of the agent, and the same session id of another agent: not counted.
	newRecorder(b, "coder", "s2", t0).call(t, "r9", shell("rm -rf /"))
	newRecorder(b, "other", "s1", t0).call(t, "r8", shell("rm -rf /"))

	h := history.New(b)
	now := policy.Scope{Agent: "coder", Session: "s1", Event: &events.Event{Time: r.at.Add(time.Second)}}
	for _, c := range []struct {
		kinds  string
		window time.Duration
		want   int64
	}{
		{"shell", all, 3},
		{"file.*", all, 2},
		{"web.fetch|web.search", all, 1},
		{"*", all, 6},
		{"shell|file.read", all, 4},
		{"mcp", all, 0},
		{"shell", 3 * time.Second, 1},     // the last two seconds hold "go test"
		{"*", 3500 * time.Millisecond, 3}, // go test, edit and the fetch
	} {
		got, err := h.SessionCount(ctx, now, c.kinds, c.window)
		if err != nil || got != c.want {
			t.Errorf("count(%q, %v) = %d, %v; want %d", c.kinds, c.window, got, err, c.want)
		}
	}
	// Before a stored event: only what came before it.
	before := policy.Scope{Agent: "coder", Session: "s1", Event: mid}
	if got, err := h.SessionCount(ctx, before, "shell", all); err != nil || got != 1 {
		t.Errorf("count before the third call = %d, %v; want 1", got, err)
	}
	byID := policy.Scope{Agent: "coder", Session: "s1", Event: &events.Event{ID: mid.ID}}
	if got, err := h.SessionCount(ctx, byID, "shell", all); err != nil || got != 1 {
		t.Errorf("count before the third call, named by its id = %d, %v; want 1", got, err)
	}
	for _, c := range []struct {
		scope          policy.Scope
		kinds, pattern string
		want           bool
	}{
		{now, "file.read", `(^|/)\.env$`, true},
		{now, "file.*", `/\.ssh/`, false},
		{now, "shell", `^rm `, false}, // other sessions' calls
		{now, "web.fetch", `example\.com`, true},
		{now, "shell", `example\.com`, false}, // a fetch, not a shell call
		{now, "*", `main\.go`, true},
		{before, "web.fetch", `example\.com`, false}, // fetched after
		{before, "file.read", `\.env$`, true},
	} {
		got, err := h.SessionSeen(ctx, c.scope, c.kinds, c.pattern)
		if err != nil || got != c.want {
			t.Errorf("seen(%q, %q) before %v = %v, %v; want %v", c.kinds, c.pattern, c.scope.Event.Stored, got, err, c.want)
		}
	}
}

func TestSessionCaughtUpAfterAnotherWriter(t *testing.T) {
	srv, nc := bustest.Start(t)
	b1 := bustest.Provision(t, nc)
	b2 := bustest.Provision(t, bustest.Conn(t, srv))
	ctx := testCtx(t)
	scope := policy.Scope{Agent: "coder", Session: "s1"}
	h := history.New(b1)
	if n, err := h.SessionCount(ctx, scope, "shell", all); err != nil || n != 0 {
		t.Fatalf("count of an empty session = %d, %v", n, err)
	}
	if seen, err := h.SessionSeen(ctx, scope, "file.read", `\.env$`); err != nil || seen {
		t.Fatalf("seen in an empty session = %v, %v", seen, err)
	}
	r := newRecorder(b2, "coder", "s1", t0) // another worker, its own connection
	r.call(t, "r1", shell("ls"))
	r.call(t, "r1", shell("pwd"))
	if n, err := h.SessionCount(ctx, scope, "shell", all); err != nil || n != 2 {
		t.Fatalf("count after another writer = %d, %v; want 2", n, err)
	}
	r.call(t, "r2", read("/home/u/.env"))
	r.call(t, "r2", shell("cat x"))
	if n, err := h.SessionCount(ctx, scope, "shell", all); err != nil || n != 3 {
		t.Fatalf("count caught up = %d, %v; want 3", n, err)
	}
	if seen, err := h.SessionSeen(ctx, scope, "file.read", `\.env$`); err != nil || !seen {
		t.Fatalf("seen caught up = %v, %v; want true", seen, err)
	}
}

func TestRestartedWorkerSeesTheSameCounts(t *testing.T) {
	srv, nc := bustest.Start(t)
	b := bustest.Provision(t, nc)
	ctx := testCtx(t)
	r := newRecorder(b, "coder", "s1", t0)
	for range 5 {
		r.call(t, "r1", shell("ls"))
	}
	c := &clock{now: t0}
	key := policy.CounterKey{Policy: "rate", Counter: "shell_per_agent", Key: "coder", Window: time.Hour}
	first := history.New(b, history.WithClock(c.Now))
	for range 7 {
		if err := first.Add(ctx, key, 1); err != nil {
			t.Fatal(err)
		}
	}
	scope := policy.Scope{Agent: "coder", Session: "s1"}
	if n, err := first.SessionCount(ctx, scope, "shell", all); err != nil || n != 5 {
		t.Fatalf("count = %d, %v", n, err)
	}
	// The worker restarts: a new connection, a new History, nothing cached.
	restarted := history.New(bustest.Provision(t, bustest.Conn(t, srv)), history.WithClock(c.Now))
	if n, err := restarted.SessionCount(ctx, scope, "shell", all); err != nil || n != 5 {
		t.Errorf("count after a restart = %d, %v; want 5", n, err)
	}
	if v, err := restarted.Counter(ctx, key); err != nil || v != 7 {
		t.Errorf("counter after a restart = %v, %v; want 7", v, err)
	}
}

func TestTwoWorkersShareACounterWindow(t *testing.T) {
	srv, nc := bustest.Start(t)
	b1 := bustest.Provision(t, nc)
	b2 := bustest.Provision(t, bustest.Conn(t, srv))
	ctx := testCtx(t)
	c := &clock{now: t0}
	w1 := history.New(b1, history.WithClock(c.Now))
	w2 := history.New(b2, history.WithClock(c.Now))
	key := policy.CounterKey{Policy: "budget", Counter: "cost_per_user", Key: "alice@example.com", Window: 24 * time.Hour}
	const each = 40
	var wg sync.WaitGroup
	errs := make(chan error, 2*each)
	for _, h := range []*history.History{w1, w2} {
		for range each {
			wg.Go(func() {
				if err := h.Add(ctx, key, 0.25); err != nil {
					errs <- err
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("add: %v", err)
	}
	for i, h := range []*history.History{w1, w2} {
		if v, err := h.Counter(ctx, key); err != nil || v != 2*each*0.25 {
			t.Errorf("worker %d: counter = %v, %v; want %v", i+1, v, err, 2*each*0.25)
		}
	}
	// Another key, another counter or another window is another sum.
	for _, other := range []policy.CounterKey{
		{Policy: "budget", Counter: "cost_per_user", Key: "bob@example.com", Window: 24 * time.Hour},
		{Policy: "budget", Counter: "calls", Key: "alice@example.com", Window: 24 * time.Hour},
		{Policy: "budget", Counter: "cost_per_user", Key: "alice@example.com", Window: time.Hour},
	} {
		if v, err := w1.Counter(ctx, other); err != nil || v != 0 {
			t.Errorf("counter %+v = %v, %v; want 0", other, v, err)
		}
	}
}

func TestCounterWindowSlides(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	c := &clock{now: t0} // on a slot's start: the window is its slots exactly
	h := history.New(b, history.WithClock(c.Now), history.WithSlots(4))
	key := policy.CounterKey{Policy: "rate", Counter: "shell", Key: "coder", Window: time.Hour} // 15-minute slots
	at := func(d time.Duration, want float64) {
		t.Helper()
		c.Set(t0.Add(d))
		if v, err := h.Counter(ctx, key); err != nil || v != want {
			t.Errorf("counter at +%v = %v, %v; want %v", d, v, err, want)
		}
	}
	add := func(d time.Duration, v float64) {
		t.Helper()
		c.Set(t0.Add(d))
		if err := h.Add(ctx, key, v); err != nil {
			t.Fatal(err)
		}
	}
	add(0, 1)
	add(10*time.Minute, 2)
	add(20*time.Minute, 4)
	at(20*time.Minute, 7)
	at(59*time.Minute, 7)
	at(time.Hour, 7)                  // the slot from +0 to +15m still overlaps the window from +0
	at(time.Hour+time.Minute, 7)      // and the window from +1m
	at(time.Hour+15*time.Minute, 4)   // the first slot has left the window
	add(time.Hour+15*time.Minute, 8)  // a new slot
	at(time.Hour+29*time.Minute, 12)  // +15m..+30m and +75m..
	at(2*time.Hour+15*time.Minute, 8) // only the newest
	at(2*time.Hour+29*time.Minute, 8) // its slot still overlaps (up to one slot before the window)
	at(2*time.Hour+30*time.Minute, 0) // gone
}

func TestBusDownIsUnavailable(t *testing.T) {
	srv, nc := bustest.Start(t)
	b := bustest.Provision(t, nc)
	ctx := testCtx(t)
	r := newRecorder(b, "coder", "s1", t0)
	r.call(t, "r1", shell("ls"))
	h := history.New(b, history.WithClock(func() time.Time { return t0 }))
	scope := policy.Scope{Agent: "coder", Session: "s1"}
	key := policy.CounterKey{Policy: "rate", Counter: "shell", Key: "coder", Window: time.Hour}
	if n, err := h.SessionCount(ctx, scope, "shell", all); err != nil || n != 1 {
		t.Fatalf("count = %d, %v", n, err)
	}
	if _, err := h.Counter(ctx, key); err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	// A policy's call is bounded (the chain's timeout): the history answers
	// within it that it could not read the record.
	down := func() context.Context {
		c, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		t.Cleanup(cancel)
		return c
	}
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, history.ErrUnavailable) {
			t.Errorf("%s with the bus down: %v; want ErrUnavailable", what, err)
		}
	}
	_, err := h.SessionCount(down(), scope, "shell", all)
	check("SessionCount", err)
	_, err = h.SessionSeen(down(), scope, "shell", "ls")
	check("SessionSeen", err)
	_, err = h.Counter(down(), key)
	check("Counter", err)
	check("Add", h.Add(down(), key, 1))
	// A closed connection says so at once.
	nc.Close()
	_, err = h.SessionCount(ctx, scope, "shell", all)
	check("SessionCount on a closed connection", err)
	_, err = h.Counter(ctx, key)
	check("Counter on a closed connection", err)
	check("Add on a closed connection", h.Add(ctx, key, 1))
	t.Log(err)
}

func TestBadQuestionsAreInvalid(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	h := history.New(b)
	scope := policy.Scope{Agent: "coder", Session: "s1"}
	key := policy.CounterKey{Policy: "rate", Counter: "shell", Key: "coder", Window: time.Hour}
	for name, err := range map[string]error{
		"unknown kind":  second(h.SessionCount(ctx, scope, "shel", all)),
		"unknown group": second(h.SessionCount(ctx, scope, "net.*", all)),
		"empty kinds":   second(h.SessionSeen(ctx, scope, "", "x")),
		"bad pattern":   second(h.SessionSeen(ctx, scope, "shell", "(")),
		"bad session":   second(h.SessionCount(ctx, policy.Scope{Agent: "coder", Session: "a.b"}, "shell", all)),
		"negative":      second(h.SessionCount(ctx, scope, "shell", -time.Second)),
		"no window":     second(h.Counter(ctx, policy.CounterKey{Policy: "rate", Counter: "shell", Key: "k"})),
		"long window":   second(h.Counter(ctx, policy.CounterKey{Policy: "rate", Counter: "shell", Key: "k", Window: 40 * 24 * time.Hour})),
		"bad policy":    second(h.Counter(ctx, policy.CounterKey{Policy: "a.b", Counter: "shell", Key: "k", Window: time.Hour})),
		"NaN":           h.Add(ctx, key, nan()),
		"negative add":  h.Add(ctx, key, -1),
		"bad option":    history.New(b, history.WithSlots(0)).Add(ctx, key, 1),
	} {
		if !errors.Is(err, history.ErrInvalid) {
			t.Errorf("%s: %v; want ErrInvalid", name, err)
		}
	}
	if v, err := h.Counter(ctx, key); err != nil || v != 0 {
		t.Errorf("counter after refused adds = %v, %v; want 0", v, err)
	}
}

func TestNotProvisionedIsARecordError(t *testing.T) {
	_, nc := bustest.Start(t)
	b, err := bus.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	_, err = history.New(b).Counter(ctx, policy.CounterKey{Policy: "rate", Counter: "shell", Key: "k", Window: time.Hour})
	if !errors.Is(err, history.ErrRecord) || errors.Is(err, history.ErrUnavailable) {
		t.Errorf("counter without a counters stream: %v; want ErrRecord", err)
	}
}

func second[T any](_ T, err error) error { return err }

func nan() float64 {
	zero := 0.0
	return zero / zero
}

// A worker whose clock is behind adds to a slot that has ended by the
// others' clocks: it is counted as long as it is within ClockSkew.
func TestLateAddWithinClockSkewCounts(t *testing.T) {
	srv, nc := bustest.Start(t)
	ctx := testCtx(t)
	ahead := &clock{now: t0.Add(15*time.Minute + 10*time.Second)}  // 10s into a 15-minute slot
	behind := &clock{now: t0.Add(15*time.Minute - 20*time.Second)} // still in the slot before
	w1 := history.New(bustest.Provision(t, nc), history.WithClock(ahead.Now), history.WithSlots(4))
	w2 := history.New(bustest.Provision(t, bustest.Conn(t, srv)), history.WithClock(behind.Now), history.WithSlots(4))
	key := policy.CounterKey{Policy: "rate", Counter: "shell", Key: "coder", Window: time.Hour}
	if err := w1.Add(ctx, key, 1); err != nil {
		t.Fatal(err)
	}
	if v, err := w1.Counter(ctx, key); err != nil || v != 1 {
		t.Fatalf("counter = %v, %v; want 1", v, err)
	}
	if err := w2.Add(ctx, key, 2); err != nil {
		t.Fatal(err)
	}
	ahead.Set(t0.Add(15*time.Minute + history.ClockSkew - 10*time.Second))
	if v, err := w1.Counter(ctx, key); err != nil || v != 3 {
		t.Fatalf("counter after a late add = %v, %v; want 3", v, err)
	}
}

// A History holding fewer sessions than it is asked about drops the least
// recently asked about and reads it again when asked.
func TestDroppedSessionIsReadAgain(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	h := history.New(b, history.WithSessions(1))
	a, c := newRecorder(b, "coder", "s1", t0), newRecorder(b, "coder", "s2", t0)
	a.call(t, "r1", shell("ls"))
	c.call(t, "r2", shell("ls"))
	c.call(t, "r2", shell("pwd"))
	for _, want := range []struct {
		session string
		n       int64
	}{{"s1", 1}, {"s2", 2}, {"s1", 1}, {"s2", 2}} {
		if n, err := h.SessionCount(ctx, policy.Scope{Agent: "coder", Session: want.session}, "shell", all); err != nil || n != want.n {
			t.Errorf("count of %s = %d, %v; want %d", want.session, n, err, want.n)
		}
	}
	a.call(t, "r1", shell("make"))
	if n, err := h.SessionCount(ctx, policy.Scope{Agent: "coder", Session: "s1"}, "shell", all); err != nil || n != 2 {
		t.Errorf("count of s1 read again = %d, %v; want 2", n, err)
	}
}
