package interceptors

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
)

// A call nobody waits on any more still hands in its answer when two ticks
// of the timer are in wake before it: one left over from the pending's last
// use (a fire of an earlier arm that landed after that call's answer) and
// the fire of the arm still outstanding. Its worker does not stay blocked
// on the send, and is free for the pending's next call.
func TestLateAnswerHasRoom(t *testing.T) {
	ev := newEvent(t, events.StageToolBefore, "search", events.ToolBefore{Call: events.ToolCall{ID: "c1", Name: "search"}})

	// p's wake holds n ticks: the answer comes once they have landed.
	lateFunc := func(p **pending, n int) Func { // not t.Fatal: it runs on the worker
		return func(context.Context, *Request) (*Decision, error) {
			for deadline := time.Now().Add(10 * time.Second); len((*p).wake) < n; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					return nil, errors.New("the timer's ticks never landed in wake")
				}
			}
			return &Decision{Kind: Deny, Reason: "late"}, nil
		}
	}

	t.Run("not waited on", func(t *testing.T) {
		// A validator left when the run's ctx ended while another ran:
		// started, canceled, never waited on.
		var p *pending
		e := &entry{reg: Registration{Plugin: "late", Stage: events.StageToolBefore, Timeout: time.Hour}, ic: lateFunc(&p, 2)}
		p = pendings.New().(*pending)
		p.wake <- false                                           // left over from the last call
		p.alarm.Arm(time.Now().Add(time.Millisecond), time.Now()) // the last call's deadline, still to come
		ctx, cancel := context.WithCancel(context.Background())
		p.prepare(ctx, e, ev, nil, nil)
		p.work <- p
		cancel()
		p.cancel()
		waitAnswered(t, p)
	})

	t.Run("abandoned", func(t *testing.T) {
		// The run's ctx ends first; then a tick of an earlier arm, in
		// flight when the waiter drained wake, lands, and the call's
		// deadline fires (here brought close): only then does the call
		// answer.
		var p *pending
		e := &entry{reg: Registration{Plugin: "late", Stage: events.StageToolBefore, Timeout: time.Hour}, ic: lateFunc(&p, 2)}
		p = pendings.New().(*pending)
		ctx, cancel := context.WithCancel(context.Background())
		p.prepare(ctx, e, ev, nil, nil)
		p.work <- p
		cancel()
		if res := p.wait(ctx); res.err == nil || !p.abandoned {
			t.Fatalf("wait after the run's ctx ended: %+v, abandoned %v: want an abandoned call", res, p.abandoned)
		}
		p.wake <- false                                           // the earlier arm's tick, landing late
		p.alarm.Arm(time.Now().Add(time.Millisecond), time.Now()) // the call's own deadline, just after
		waitAnswered(t, p)
	})
}

// waitAnswered waits until p's worker has handed in its answer and is
// parked again, ready for another call.
func waitAnswered(t *testing.T, p *pending) {
	t.Helper()
	waitUntil(t, "the late answer beside the two ticks in wake", func() bool { return len(p.wake) == 3 })
	answered := false
	for range 3 {
		answered = answered || <-p.wake
	}
	if !answered {
		t.Fatal("wake holds three ticks, no answer")
	}
	if p.res.dec == nil || p.res.dec.Reason != "late" {
		t.Fatalf("result %+v, want the late deny", p.res)
	}
	// The worker takes the next call: its own answer, not the last one's.
	e := &entry{reg: Registration{Plugin: "next", Stage: events.StageToolBefore, Timeout: time.Hour},
		ic: Func(func(context.Context, *Request) (*Decision, error) { return &Decision{Kind: Deny, Reason: "next"}, nil })}
	p.abandoned = false
	p.prepare(context.Background(), e, p.cs.req.Event, nil, nil)
	p.work <- p
	if res := p.wait(context.Background()); res.err != nil || res.dec == nil || res.dec.Reason != "next" {
		t.Fatalf("next call on the worker: %+v, want its own deny", res)
	}
}

// waitUntil polls cond until it holds, failing the test after 10s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 10s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
