package bus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
)

// A reclaim (a resumed attempt's claim) is stored only while the session's
// last message is the one the attempt read: an event of the earlier
// attempt stored since refuses it, naming the claim it wanted to take
// over; a newer claim refuses it naming that one; messages that are not
// valid events are stepped over.
func TestReclaimExpectsTheSessionAsRead(t *testing.T) {
	b := bustest.StartBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev := func(stage events.Stage) *events.Event { return fenceEvent(t, stage, "r1") }
	if _, err := b.Reclaim(ctx, ev(events.StageToolBefore), 1, 1); !errors.Is(err, bus.ErrInvalidOption) {
		t.Fatalf("Reclaim with a tool.before = %v", err)
	}
	if _, err := b.Reclaim(ctx, ev(events.StageRunStarted), 0, 0); !errors.Is(err, bus.ErrInvalidOption) {
		t.Fatalf("Reclaim of a session without a claim = %v", err)
	}
	first, err := b.Claim(ctx, ev(events.StageRunStarted), 0)
	if err != nil {
		t.Fatal(err)
	}
	last := func() uint64 {
		t.Helper()
		evs, err := b.SessionEvents(ctx, "a", "s1")
		if err != nil {
			t.Fatal(err)
		}
		return evs[len(evs)-1].Stored
	}
	if err := b.AppendSync(ctx, ev(events.StageStepStarted), first); err != nil {
		t.Fatal(err)
	}
	seen := last()
	// The first attempt goes on after the second read the session.
	if err := b.AppendSync(ctx, ev(events.StageContextAssembled), first); err != nil {
		t.Fatal(err)
	}
	_, err = b.Reclaim(ctx, ev(events.StageRunStarted), first, seen)
	var fenced *bus.FencedError
	if !errors.As(err, &fenced) || fenced.ClaimedBy().Stored != first {
		t.Fatalf("a reclaim on a stale read = %v, want a FencedError naming the claim at %d", err, first)
	}

	// Read again: past foreign messages on any subject of the session, the
	// reclaim is stored, and the first attempt is fenced out.
	seen = last()
	for _, subject := range []string{"hookbus.evt.a.s1.step.started", "hookbus.evt.a.s1.run.started"} {
		if _, err := b.JetStream().Publish(ctx, subject, []byte("garbage")); err != nil {
			t.Fatal(err)
		}
	}
	second, err := b.Reclaim(ctx, ev(events.StageRunStarted), first, seen)
	if err != nil {
		t.Fatalf("a reclaim past foreign messages: %v", err)
	}
	if err := b.AppendSync(ctx, ev(events.StageModelResponded), first); !errors.Is(err, bus.ErrFenced) {
		t.Fatalf("an append of the first attempt after the reclaim = %v, want ErrFenced", err)
	}

	// A reclaim that did not see the second claim is refused, naming it.
	_, err = b.Reclaim(ctx, ev(events.StageRunStarted), first, seen)
	if !errors.As(err, &fenced) || fenced.ClaimedBy().Stored != second {
		t.Fatalf("a reclaim that missed a newer claim = %v, want a FencedError naming the claim at %d", err, second)
	}
}
