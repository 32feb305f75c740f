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

func TestFencedPublishesStopAfterANewerClaim(t *testing.T) {
	b := bustest.StartBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev := func(stage events.Stage, run string) *events.Event {
		p, _ := events.PayloadFor(stage)
		e, err := events.New(stage, events.Meta{Source: "t", AgentID: "a", SessionID: "s1", RunID: run}, p)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	if _, err := b.Claim(ctx, ev(events.StageToolBefore, "r1")); !errors.Is(err, bus.ErrInvalidOption) {
		t.Fatalf("Claim with a tool.before = %v", err)
	}
	first, err := b.Claim(ctx, ev(events.StageRunStarted, "r1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.PublishFenced(ctx, ev(events.StageToolBefore, "r1"), &first); err != nil {
		t.Fatalf("fenced publish by the owner: %v", err)
	}
	// Async events of the session do not move the fence.
	if err := b.Publish(ctx, ev(events.StageStepStarted, "r1")); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if err := b.PublishFenced(ctx, ev(events.StageToolAfter, "r1"), &first); err != nil {
		t.Fatalf("fenced publish after async events: %v", err)
	}
	// Another attempt claims the session.
	second, err := b.Claim(ctx, ev(events.StageRunStarted, "r1"))
	if err != nil {
		t.Fatal(err)
	}
	stale := ev(events.StageRunCompleted, "r1")
	err = b.PublishFenced(ctx, stale, &first)
	var fenced *bus.FencedError
	if !errors.Is(err, bus.ErrFenced) || !errors.As(err, &fenced) || fenced.By.Stage != events.StageRunStarted {
		t.Fatalf("fenced publish by the old attempt = %v, want a FencedError naming the claim", err)
	}
	if err := b.PublishFenced(ctx, ev(events.StageRunCompleted, "r1"), &second); err != nil {
		t.Fatalf("fenced publish by the new owner: %v", err)
	}
	// The stale publish left nothing behind.
	evs, err := b.SessionEvents(ctx, "a", "s1")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.ID == stale.ID {
			t.Fatal("a fenced-out event was stored")
		}
	}
	if len(evs) != 6 {
		t.Fatalf("session holds %d events, want 6", len(evs))
	}
	// A fence of another session is refused.
	other := ev(events.StageToolBefore, "r1")
	other.SessionID = "s2"
	if err := b.PublishFenced(ctx, other, &second); !errors.Is(err, bus.ErrInvalidOption) {
		t.Fatalf("fence of another session = %v", err)
	}
}

// A message on the claim subject that is not a valid run.started claims
// nothing: the fenced publish moves past it.
func TestFenceIgnoresForeignMessagesOnTheClaimSubject(t *testing.T) {
	b := bustest.StartBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	started, err := events.New(events.StageRunStarted, events.Meta{Source: "t", AgentID: "a", SessionID: "s1", RunID: "r1"}, events.RunStarted{Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := b.Claim(ctx, started)
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"garbage", `{"not":"an event"}`} {
		if _, err := b.JetStream().Publish(ctx, "hookbus.evt.a.s1.run.started", []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	before := f.Seq
	tb, err := events.New(events.StageToolBefore, events.Meta{Source: "t", AgentID: "a", SessionID: "s1", RunID: "r1"}, events.ToolBefore{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.PublishFenced(ctx, tb, &f); err != nil {
		t.Fatalf("fenced publish past foreign messages: %v", err)
	}
	if f.Seq != before+2 {
		t.Fatalf("fence at %d, want it moved past the 2 foreign messages to %d", f.Seq, before+2)
	}
}
