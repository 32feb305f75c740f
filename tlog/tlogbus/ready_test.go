package tlogbus_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/tlog/tlogbus"
)

// A checkpointer whose durable consumer is paused keeps running, but is
// not ready: Ready names the pause, and once a message waits longer than
// the lag allowed, the lag too; resumed, it catches up and is ready again.
func TestCheckpointerPausedIsNotReady(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	if err := b.PublishSync(ctx, bustest.Event(t, "a", "s", "r", events.StageIntake, 1)); err != nil {
		t.Fatal(err)
	}
	key := newLogKey(t, logName)
	r := startCheckpointer(t, b, tlogbus.CheckpointerConfig{Signer: key.signer, Verifier: key.verifier, Every: 10})
	r.caughtUp(t, b)
	const lag = 200 * time.Millisecond
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return r.c.Ready(ctx, lag) == nil }, "not ready once caught up: %v", r.c.Ready(ctx, lag))

	js := b.JetStream()
	if _, err := js.PauseConsumer(ctx, b.Names().Events, tlogbus.DefaultDurable, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := r.c.Ready(ctx, lag); !errors.Is(err, tlogbus.ErrNotReady) || !strings.Contains(err.Error(), "paused") {
		t.Fatalf("Ready while paused = %v", err)
	}
	if err := b.PublishSync(ctx, bustest.Event(t, "a", "s", "r", events.StageStepCompleted, 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := js.ResumeConsumer(ctx, b.Names().Events, tlogbus.DefaultDurable); err != nil {
		t.Fatal(err)
	}
	// Its pull request waiting while paused ends first (up to its expiry).
	bustest.Eventuallyf(t, time.Minute, func() bool { return r.c.Ready(context.Background(), lag) == nil }, "not ready once resumed")
}

// A checkpointer that falls behind is not ready: a message waiting longer
// than the lag allowed with no checkpoint covering it.
func TestCheckpointerLaggingIsNotReady(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	key := newLogKey(t, logName)
	r := startCheckpointer(t, b, tlogbus.CheckpointerConfig{Signer: key.signer, Verifier: key.verifier, Every: 10})
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return r.c.Ready(ctx, time.Minute) == nil }, "not ready on an empty stream: %v", r.c.Ready(ctx, time.Minute))
	_ = r.halt(t) // stopped: whatever it says about stopping is not this test's

	if err := b.PublishSync(ctx, bustest.Event(t, "a", "s", "r", events.StageIntake, 1)); err != nil {
		t.Fatal(err)
	}
	bustest.Eventuallyf(t, 10*time.Second, func() bool {
		err := r.c.Ready(ctx, 50*time.Millisecond)
		return errors.Is(err, tlogbus.ErrNotReady) && strings.Contains(err.Error(), "no checkpoint covers it")
	}, "a stopped checkpointer with a message waiting: Ready = %v", r.c.Ready(ctx, 50*time.Millisecond))
}

// Verify says how far the checkpoints lag behind the stream, and with
// MaxLag fails when they lag further.
func TestVerifySaysHowFarCheckpointsLag(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	if err := b.PublishSync(ctx, bustest.Event(t, "a", "s", "r", events.StageIntake, 1)); err != nil {
		t.Fatal(err)
	}
	key := newLogKey(t, logName)
	checkpointAll(t, b, tlogbus.CheckpointerConfig{Signer: key.signer, Verifier: key.verifier, Every: 10})
	if err := b.PublishSync(ctx, bustest.Event(t, "a", "s", "r", events.StageStepCompleted, 2)); err != nil {
		t.Fatal(err)
	}
	v := verifyStream(t, b, key, tlogbus.VerifyConfig{})
	if !v.Intact || !strings.Contains(explain(v), "seq 2, was stored") {
		t.Fatalf("without MaxLag:\n%s", explain(v))
	}
	bustest.Eventuallyf(t, 10*time.Second, func() bool {
		v = verifyStream(t, b, key, tlogbus.VerifyConfig{MaxLag: time.Nanosecond})
		return !v.Intact && strings.Contains(explain(v), "lagging")
	}, "with MaxLag: %s", explain(v))
}
