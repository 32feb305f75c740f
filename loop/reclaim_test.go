package loop_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
)

// liveEarlier is the Emitter of a resumed attempt whose run's earlier
// attempt is still alive: before each of the new attempt's claims, the
// earlier attempt appends another event on its own claim.
type liveEarlier struct {
	loop.Emitter
	t        *testing.T
	claim    uint64 // the earlier attempt's
	tmpl     *events.Event
	reclaims atomic.Int32
}

func (l *liveEarlier) Reclaim(ctx context.Context, e *events.Event, last, seen uint64) (uint64, error) {
	n := l.reclaims.Add(1)
	ev, err := events.New(events.StageStepStarted, events.Meta{Source: "earlier", AgentID: l.tmpl.AgentID, SessionID: l.tmpl.SessionID,
		RunID: l.tmpl.RunID, Step: 10 + int(n), Seq: 100 + uint64(n)}, events.StepStarted{Step: 10 + int(n)})
	if err != nil {
		l.t.Error(err)
	} else if err := l.Emitter.AppendSync(ctx, ev, l.claim); err != nil {
		l.t.Errorf("the earlier attempt's append: %v", err)
	}
	return l.Emitter.Reclaim(ctx, e, last, seen)
}

// A resumed attempt whose run's earlier attempt goes on writing claims
// nothing: each claim is refused because the session changed since it was
// read, the attempt reads again, and after the last try leaves the run to
// the earlier attempt (ErrLostRun) without storing anything. Once the
// earlier attempt is silent, the next attempt claims the session and ends
// the run.
func TestResumedAttemptLeavesTheRunToALiveEarlierAttempt(t *testing.T) {
	b := bustest.StartBus(t)
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
	// intake, run.started, step.started, context.assembled, model.responded | cut
	if res, err := newEngine(t, b, loop.Config{Emitter: &failingEmitter{inner: b, limit: 5}}).Run(ctxT(t), req); err == nil || res != nil && res.Ended {
		t.Fatalf("first attempt: %+v, %v; want it cut off", res, err)
	}
	evs := allEvents(t, b)
	if len(evs) != 5 || evs[1].Stage != events.StageRunStarted {
		t.Fatalf("first attempt stored %v", stagesOf(evs))
	}
	live := &liveEarlier{Emitter: b, t: t, claim: evs[1].Stored, tmpl: evs[1]}
	res, err := newEngine(t, b, loop.Config{Emitter: live}).Run(ctxT(t), req)
	if !errors.Is(err, loop.ErrLostRun) || res == nil || res.Ended {
		t.Fatalf("resumed attempt beside a live one: %+v, %v; want ErrLostRun", res, err)
	}
	after := allEvents(t, b)
	if n := live.reclaims.Load(); n != 4 || len(after) != 5+int(n) {
		t.Fatalf("%d claims tried, %d events stored (%v); want 4 tries, and only the earlier attempt's events", n, len(after), stagesOf(after))
	}

	res, err = newEngine(t, b, loop.Config{}).Run(ctxT(t), req)
	if err != nil || res.Reason != events.ReasonDone || !res.Resumed {
		t.Fatalf("resumed once the earlier attempt is silent: %+v, %v", res, err)
	}
	if n := runCompletions(allEvents(t, b)); n != 1 {
		t.Fatalf("%d terminal events", n)
	}
}
