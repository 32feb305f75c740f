package runs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go/jetstream"
)

// A wake-up is delivered to its agent's consumer when it is due, not
// before; a later WakeAt of the run replaces the earlier.
func TestWakeUpDeliveredWhenDue(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	got := make(chan events.Wake, 4)
	wc, err := runs.New(b).ConsumeWakes(ctx, runs.WakeConsumerConfig{Agent: "ops"}, func(_ context.Context, w events.Wake) error {
		got <- w
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Stop()
	other, err := runs.New(b).ConsumeWakes(ctx, runs.WakeConsumerConfig{Agent: "demo"}, func(_ context.Context, w events.Wake) error {
		t.Errorf("demo's consumer got %+v", w)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Stop()

	far := time.Now().Add(time.Hour)
	if err := runs.New(b).WakeAt(ctx, events.Wake{RunID: "r1", AgentID: "ops", SessionID: "s1", At: far}); err != nil {
		t.Fatal(err)
	}
	soon := time.Now().Add(time.Second)
	if err := runs.New(b).WakeAt(ctx, events.Wake{RunID: "r1", AgentID: "ops", SessionID: "s1", At: soon}); err != nil {
		t.Fatal(err)
	}
	select {
	case w := <-got:
		if w.RunID != "r1" || w.SessionID != "s1" || w.At.Before(soon.Truncate(time.Second)) || w.At.After(soon.Add(time.Second)) {
			t.Fatalf("wake-up %+v, want r1's due at %v", w, soon)
		}
		if time.Now().Before(w.At) {
			t.Fatalf("delivered at %v, before it was due (%v)", time.Now(), w.At)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wake-up was not delivered")
	}
	// The earlier schedule (an hour away) was replaced: the stream holds
	// no schedule any more, only the due wake-up.
	s, err := b.JetStream().Stream(ctx, b.Names().Wakes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetLastMsgForSubject(ctx, "hookbus.wake.ops.r1"); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Fatalf("the schedule is still there: %v", err)
	}
	bustest.Eventuallyf(t, 5*time.Second, func() bool { return wc.Handled() == 1 }, "the wake-up acknowledged")
}
