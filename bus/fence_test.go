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

func fenceEvent(t *testing.T, stage events.Stage, run string) *events.Event {
	t.Helper()
	p, _ := events.PayloadFor(stage)
	e, err := events.New(stage, events.Meta{Source: "t", AgentID: "a", SessionID: "s1", RunID: run}, p)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestAppendsStopAfterANewerClaim(t *testing.T) {
	b := bustest.StartBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev := func(stage events.Stage) *events.Event { return fenceEvent(t, stage, "r1") }
	if _, err := b.Claim(ctx, ev(events.StageToolBefore), 0); !errors.Is(err, bus.ErrInvalidOption) {
		t.Fatalf("Claim with a tool.before = %v", err)
	}
	// Appends before any claim expect none.
	if err := b.Append(ctx, ev(events.StageIntake), 0); err != nil {
		t.Fatal(err)
	}
	first, err := b.Claim(ctx, ev(events.StageRunStarted), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AppendSync(ctx, ev(events.StageToolBefore), first); err != nil {
		t.Fatalf("append by the owner: %v", err)
	}
	// Appends of other subjects of the session do not move the fence.
	if err := b.Append(ctx, ev(events.StageStepStarted), first); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if err := b.AppendSync(ctx, ev(events.StageToolAfter), first); err != nil {
		t.Fatalf("append after async appends: %v", err)
	}
	// A claim that did not see the first one is refused, naming it.
	_, err = b.Claim(ctx, ev(events.StageRunStarted), 0)
	var fenced *bus.FencedError
	if !errors.As(err, &fenced) || fenced.ClaimedBy().Stored != first {
		t.Fatalf("a claim made on a stale read = %v, want a FencedError naming the claim at %d", err, first)
	}
	// Another attempt claims the session.
	second, err := b.Claim(ctx, ev(events.StageRunStarted), first)
	if err != nil {
		t.Fatal(err)
	}
	stale := ev(events.StageRunCompleted)
	err = b.AppendSync(ctx, stale, first)
	if !errors.Is(err, bus.ErrFenced) || !errors.As(err, &fenced) || fenced.By.Stage != events.StageRunStarted || fenced.By.Stored != second {
		t.Fatalf("append by the old attempt = %v, want a FencedError naming the claim at %d", err, second)
	}
	// An asynchronous append of the old attempt fails at Flush, the same way.
	staleAsync := ev(events.StageStepCompleted)
	if err := b.Append(ctx, staleAsync, first); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(ctx, "r1"); !errors.Is(err, bus.ErrFenced) {
		t.Fatalf("Flush after the old attempt's async append = %v, want ErrFenced", err)
	}
	if err := b.AppendSync(ctx, ev(events.StageRunCompleted), second); err != nil {
		t.Fatalf("append by the new owner: %v", err)
	}
	// The stale appends left nothing behind.
	evs, err := b.SessionEvents(ctx, "a", "s1")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.ID == stale.ID || e.ID == staleAsync.ID {
			t.Fatalf("a fenced-out event (%s) was stored", e.Stage)
		}
		if e.Stored == 0 {
			t.Fatalf("event %s read without its stream sequence", e.ID)
		}
	}
	if len(evs) != 7 {
		t.Fatalf("session holds %d events, want 7", len(evs))
	}
}

// A message on the claim subject that is not a valid run.started claims
// nothing: appends step over it, and later appends of the same claim expect
// where the earlier ones ended up.
func TestFenceIgnoresForeignMessagesOnTheClaimSubject(t *testing.T) {
	b := bustest.StartBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	claim, err := b.Claim(ctx, fenceEvent(t, events.StageRunStarted, "r1"), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"garbage", `{"not":"an event"}`} {
		if _, err := b.JetStream().Publish(ctx, "hookbus.evt.a.s1.run.started", []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.AppendSync(ctx, fenceEvent(t, events.StageToolBefore, "r1"), claim); err != nil {
		t.Fatalf("append past foreign messages: %v", err)
	}
	for range 3 {
		if err := b.Append(ctx, fenceEvent(t, events.StageToolAfter, "r1"), claim); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Flush(ctx, "r1"); err != nil {
		t.Fatalf("async appends past foreign messages: %v", err)
	}
	evs, err := b.SessionEvents(ctx, "a", "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 5 {
		t.Fatalf("session holds %d events, want 5 (the garbage is skipped)", len(evs))
	}
}

// JetStream refuses a publish whose id it already stored: on a first send
// that is another publisher's message under the event's id (a forgery, or a
// bug), and the event is not stored. It is an error, never a success.
func TestFirstSendReportedDuplicateIsAnError(t *testing.T) {
	b := bustest.StartBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	real := fenceEvent(t, events.StageToolBefore, "r1")
	forged := real.Clone()
	forged.Data = []byte(`{"call":{"id":"x","name":"forged"}}`)
	if err := b.PublishSync(ctx, forged); err != nil {
		t.Fatal(err)
	}
	if err := b.PublishSync(ctx, real); !errors.Is(err, bus.ErrDuplicate) {
		t.Fatalf("PublishSync of an id already stored = %v, want ErrDuplicate", err)
	}
	if err := b.AppendSync(ctx, real, 0); !errors.Is(err, bus.ErrDuplicate) {
		t.Fatalf("AppendSync of an id already stored = %v, want ErrDuplicate", err)
	}
	async := real.Clone()
	if err := b.Append(ctx, async, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(ctx, "r1"); !errors.Is(err, bus.ErrDuplicate) {
		t.Fatalf("Flush after an async append of an id already stored = %v, want ErrDuplicate", err)
	}
}
