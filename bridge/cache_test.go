package bridge_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/bridge"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
)

// unfenced is a Store that appends whatever the session holds: the fence
// ignored, as a writer that trusted its cache would append.
type unfenced struct{ bridge.Store }

func (u unfenced) AppendAfter(ctx context.Context, e *events.Event, _ uint64) (uint64, error) {
	last, err := u.LastEvent(ctx, e.AgentID, e.SessionID, "")
	if err != nil {
		return 0, err
	}
	seen := uint64(0)
	if last != nil {
		seen = last.Stored
	}
	return u.Store.AppendAfter(ctx, e, seen)
}

// cachedSession drives one session through writers that take turns, two
// and three events each: each a bridge with a cache of its own (two
// gateways), and a third started afresh halfway (a gateway restarted). It
// returns the session's events and the number of reads of the session's
// last event.
func cachedSession(t *testing.T, b *bus.Bus, store func(bridge.Store) bridge.Store, session string) ([]*events.Event, int64) {
	t.Helper()
	guard := startGuard(t, b)
	reads := &counting{Store: b}
	newBridge := func() *bridge.Bridge {
		br, err := bridge.New(bridge.Config{Store: store(reads), Hooks: guard, Cache: bridge.NewCache(0, 0)})
		if err != nil {
			t.Fatal(err)
		}
		return br
	}
	writers := []*bridge.Bridge{newBridge(), newBridge()}
	handle(t, writers[0], input(t, session, "SessionStart", `, "source": "startup"`))
	handle(t, writers[0], input(t, session, "UserPromptSubmit", `, "prompt": "go"`))
	for i := range 12 {
		if i == 6 {
			writers[0] = newBridge() // restarted: its cache is empty
		}
		br := writers[i%2]
		id := fmt.Sprintf("toolu_%d", i)
		command := "true"
		if i%4 == 3 {
			command = "ls" // the guard rewrites it: a hook.decided before the tool.before
		}
		handle(t, br, input(t, session, "PreToolUse", bash(id, command)))
		handle(t, br, input(t, session, "PostToolUse", bash(id, command)+`, "tool_response": {"stdout": "a"}`))
		if i%3 == 0 {
			handle(t, br, input(t, session, "Notification", `, "message": "waiting"`))
		}
	}
	handle(t, writers[1], input(t, session, "Stop", `, "stop_hook_active": false, "last_assistant_message": "done"`))
	evs, err := b.SessionEvents(context.Background(), bridge.DefaultAgent, session)
	if err != nil {
		t.Fatal(err)
	}
	return evs, reads.last.Load()
}

// verify returns the problems that fail the session's runs, and whether
// it holds each of the 12 calls' tool.before and tool.after once.
func verify(evs []*events.Event) (problems []string, whole bool) {
	var v audit.Verifier
	calls := map[string]int{}
	for _, e := range evs {
		v.Add(e)
		if e.Stage == events.StageToolBefore || e.Stage == events.StageToolAfter {
			var p struct {
				Call events.ToolCall `json:"call"`
			}
			if e.DecodeData(&p) == nil {
				calls[string(e.Stage)+" "+p.Call.ID]++
			}
		}
	}
	for _, vd := range v.Verdicts() {
		for _, p := range vd.Problems {
			if p.Fails {
				problems = append(problems, fmt.Sprintf("run %s: %s at seq %d: %s", vd.RunID, p.Kind, p.Seq, p.Detail))
			}
		}
	}
	whole = len(calls) == 24
	for _, n := range calls {
		whole = whole && n == 1
	}
	return problems, whole
}

// Two gateways on one session, each remembering where the session stood
// after its own appends, and one restarted: every append of a writer whose
// cache went stale is refused by its fence, read again and stored in
// place, so the run's hash chain verifies and nothing is lost; a writer
// that appends to the session as it last left it reads nothing.
func TestCacheTwoWriters(t *testing.T) {
	b := bustest.StartBus(t)
	evs, reads := cachedSession(t, b, func(s bridge.Store) bridge.Store { return s }, "two-writers")
	problems, whole := verify(evs)
	for _, p := range problems {
		t.Error(p)
	}
	if !whole {
		t.Errorf("some call's tool.before or tool.after is missing or twice: %s", stages(t, b, bridge.DefaultAgent, "two-writers"))
	}
	if got := stages(t, b, bridge.DefaultAgent, "two-writers"); strings.Count(got, "run.started") != 1 || !strings.HasSuffix(got, "1:stop 1:run.completed") {
		t.Errorf("session: %s", got)
	}
	// 41 events handled; the second of each turn's events, and the third,
	// come from the cache.
	if reads >= 30 {
		t.Errorf("%d reads of the session's last event for 41 events: the cache was not used", reads)
	}

	// The same writers with the fence ignored break the chain: the test
	// above rests on the fence.
	evs, _ = cachedSession(t, b, func(s bridge.Store) bridge.Store { return unfenced{s} }, "unfenced")
	if problems, whole := verify(evs); len(problems) == 0 && whole {
		t.Error("with the fence ignored, the session still verified: the test does not see a stale cache")
	}
}

// A cache holds at most its size, the sessions least recently used going
// first; a session whose run ended is forgotten, and so is one closed as
// idle.
func TestCacheBounded(t *testing.T) {
	b := bustest.StartBus(t)
	cache := bridge.NewCache(2, 0)
	br, err := bridge.New(bridge.Config{Store: b, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		handle(t, br, input(t, fmt.Sprintf("bounded-%d", i), "SessionStart", `, "source": "startup"`))
	}
	if n := cache.Len(); n != 2 {
		t.Fatalf("%d sessions remembered, want 2", n)
	}
	handle(t, br, input(t, "bounded-2", "SessionEnd", `, "reason": "other"`))
	if n := cache.Len(); n != 1 {
		t.Fatalf("after a session's end, %d sessions remembered, want 1", n)
	}
	closed, err := br.CloseIdle(context.Background(), "bounded-1", 0, time.Now())
	if err != nil || !closed {
		t.Fatalf("close idle: %v %v", closed, err)
	}
	if n := cache.Len(); n != 0 {
		t.Fatalf("after a session closed as idle, %d sessions remembered, want 0", n)
	}
	// Its next event reads the session again: it opens a new run after
	// the idle end.
	handle(t, br, input(t, "bounded-1", "PreToolUse", bash("toolu_1", "true")))
	if got, want := stages(t, b, bridge.DefaultAgent, "bounded-1"), "1:run.started 1:run.completed 2:run.started 2:tool.before"; got != want {
		t.Fatalf("session:\n got %s\nwant %s", got, want)
	}
}

// A session silent for longer than the cache's age is read again.
func TestCacheAge(t *testing.T) {
	b := bustest.StartBus(t)
	store := &counting{Store: b}
	cache := bridge.NewCache(0, time.Nanosecond)
	br, err := bridge.New(bridge.Config{Store: store, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	handle(t, br, input(t, "aged", "SessionStart", `, "source": "startup"`))
	for i := range 3 {
		store.last.Store(0)
		handle(t, br, input(t, "aged", "PreToolUse", bash(fmt.Sprintf("toolu_%d", i), "true")))
		if n := store.last.Load(); n != 1 {
			t.Fatalf("event %d: %d reads of the session's last event, want 1", i, n)
		}
	}
	if got, want := stages(t, b, bridge.DefaultAgent, "aged"), "1:run.started 1:tool.before 1:tool.before 1:tool.before"; got != want {
		t.Fatalf("session:\n got %s\nwant %s", got, want)
	}
}
