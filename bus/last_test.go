package bus_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
)

// LastEvent reads a session's last event, of any stage or of one, with
// its stream sequence; nil for a session (or stage) with none. Another
// session's later events do not count, large data is fetched.
func TestLastEvent(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	if e, err := b.LastEvent(ctx, "a", "s1", ""); e != nil || err != nil {
		t.Fatalf("empty session: %v, %v", e, err)
	}
	started := testEvent(t, "a", "s1", "r1", events.StageRunStarted, 1)
	before := testEvent(t, "a", "s1", "r1", events.StageToolBefore, 2)
	big := sizedEvent(t, "a", "s1", "r1", 3, 2<<20) // claim-checked
	publishAll(t, b, started, before, big, testEvent(t, "a", "s2", "r2", events.StageRunStarted, 1))
	last, err := b.LastEvent(ctx, "a", "s1", "")
	if err != nil || last.ID != big.ID || last.Stored == 0 || len(last.Data) < 2<<20 {
		t.Fatalf("last: %v, %v", last, err)
	}
	if e, err := b.LastEvent(ctx, "a", "s1", events.StageToolBefore); err != nil || e.ID != before.ID || e.Stored >= last.Stored {
		t.Fatalf("last tool.before: %v, %v", e, err)
	}
	if e, err := b.LastEvent(ctx, "a", "s1", events.StageStop); e != nil || err != nil {
		t.Fatalf("no stop: %v, %v", e, err)
	}
	if _, err := b.LastEvent(ctx, "a.b", "s1", ""); !errors.Is(err, events.ErrInvalidID) {
		t.Fatalf("bad agent: %v", err)
	}
}

// WaitEvent returns the first matching event stored at or after a stream
// sequence, whether it is stored already or comes later, and gives up at
// the context's deadline.
func TestWaitEvent(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	first := testEvent(t, "a", "s1", "r1", events.StageToolBefore, 1)
	publishAll(t, b, first)
	got, err := b.WaitEvent(ctx, "a", "s1", events.StageToolBefore, 1, nil)
	if err != nil || got.ID != first.ID {
		t.Fatalf("stored already: %v, %v", got, err)
	}
	later := testEvent(t, "a", "s1", "r1", events.StageToolBefore, 2)
	published := make(chan error, 1)
	go func() { published <- b.PublishSync(ctx, later) }() // before or after the wait starts: either way it is found
	got, err = b.WaitEvent(ctx, "a", "s1", events.StageToolBefore, got.Stored+1, func(e *events.Event) bool { return e.Seq == 2 })
	if err != nil || got.ID != later.ID {
		t.Fatalf("to come: %v, %v", got, err)
	}
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := b.WaitEvent(short, "a", "s1", events.StageStop, 1, nil); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "stop") {
		t.Fatalf("nothing comes: %v", err)
	}
}
