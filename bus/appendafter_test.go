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

// AppendAfter stores an event only when the session's last message is the
// one the writer read: of two writers that read the same session, one
// wins and the other learns which event came first.
func TestAppendAfter(t *testing.T) {
	b := bustest.StartBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first, err := b.AppendAfter(ctx, fenceEvent(t, events.StageIntake, "r1"), 0)
	if err != nil {
		t.Fatal(err)
	}
	// Another session's events do not move this one's fence.
	other := fenceEvent(t, events.StageIntake, "r9")
	other.SessionID = "s2"
	if _, err := b.AppendAfter(ctx, other, 0); err != nil {
		t.Fatal(err)
	}
	winner := fenceEvent(t, events.StageRunStarted, "r1")
	second, err := b.AppendAfter(ctx, winner, first)
	if err != nil || second <= first {
		t.Fatalf("second append: %d, %v", second, err)
	}
	_, err = b.AppendAfter(ctx, fenceEvent(t, events.StageRunStarted, "r2"), first)
	var fe *bus.FencedError
	if !errors.As(err, &fe) || !errors.Is(err, bus.ErrFenced) || fe.By.ID != winner.ID || fe.By.Stored != second {
		t.Fatalf("loser: %v", err)
	}
	// Nothing of the loser was stored.
	evs, err := b.SessionEvents(ctx, "a", "s1")
	if err != nil || len(evs) != 2 {
		t.Fatalf("session: %d events, %v", len(evs), err)
	}
	// A session with events refuses an append that expects none.
	if _, err := b.AppendAfter(ctx, fenceEvent(t, events.StageIntake, "r3"), 0); !errors.Is(err, bus.ErrFenced) {
		t.Fatalf("append expecting an empty session: %v", err)
	}
}
