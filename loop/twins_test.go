package loop_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
)

// staleRead gives its first reader the session as it was before anything
// of it was stored: an attempt that read the session at the same moment as
// another attempt of its run.
type staleRead struct {
	loop.History
	once sync.Once
}

func (s *staleRead) SessionEvents(ctx context.Context, agent, session string) ([]*events.Event, error) {
	stale := false
	s.once.Do(func() { stale = true })
	if stale {
		return nil, nil
	}
	return s.History.SessionEvents(ctx, agent, session)
}

// atClaim runs hook once, when the attempt is about to claim its session
// (its intake is stored).
type atClaim struct {
	loop.Emitter
	once sync.Once
	hook func()
}

func (a *atClaim) Claim(ctx context.Context, e *events.Event, last uint64) (uint64, error) {
	a.once.Do(a.hook)
	return a.Emitter.Claim(ctx, e, last)
}

// heldClaim holds its attempt's claim until released.
type heldClaim struct {
	loop.Emitter
	reached, release chan struct{}
	once             atomic.Bool
}

func (h *heldClaim) Claim(ctx context.Context, e *events.Event, last uint64) (uint64, error) {
	if h.once.CompareAndSwap(false, true) {
		close(h.reached)
		<-h.release
	}
	return h.Emitter.Claim(ctx, e, last)
}

// Two deliveries of one new run at the same moment (a run request
// redelivered while its first worker starts it), both reading the session
// before either stored anything: the second's intake is refused, since the
// first's was stored after its read; it reads again and finds the run. The
// run's record holds one intake and seqs 1..N, and verifies; the tool ran
// once.
func TestTwoDeliveriesOfANewRunStoreOneIntake(t *testing.T) {
	records(t, func(t *testing.T, rec record) {
		req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
		calc := &countingTool{name: "calculator", answer: "42"}
		second := &heldClaim{Emitter: rec, reached: make(chan struct{}), release: make(chan struct{})}
		var done <-chan outcome
		first := &atClaim{Emitter: rec, hook: func() {
			eng := newEngine(t, rec, loop.Config{Emitter: second, History: &staleRead{History: rec}, Model: scripted.New(oneCallScript), Tools: []loop.Tool{calc}})
			done = goRun(ctxT(t), eng, req)
			select {
			case <-second.reached: // it stored its intake too, and would claim
			case got := <-done: // its intake was refused: it read again
				ch := make(chan outcome, 1)
				ch <- got
				done = ch
			}
		}}
		res, err := newEngine(t, rec, loop.Config{Emitter: first, Model: scripted.New(oneCallScript), Tools: []loop.Tool{calc}}).Run(ctxT(t), req)
		if err != nil || res.Reason != events.ReasonDone {
			t.Fatalf("the first delivery: %+v, %v", res, err)
		}
		close(second.release)
		got := <-done
		t.Logf("the second delivery: %+v, %v", got.res, got.err)
		evs := allEvents(t, rec)
		checkRunRecord(t, evs, req.RunID)
		checkChains(t, evs)
		if n := countStages(runEvents(evs, req.RunID), events.StageIntake); n != 1 || calc.calls.Load() != 1 {
			t.Fatalf("%d intakes stored, the tool ran %d times; want one each\n%s", n, calc.calls.Load(), seqLines(runEvents(evs, req.RunID)))
		}
	})
}

// cutRead gives its first reader the events of the session stored up to
// (not including) the first event cut matches: an attempt that read a run
// in the middle, before its last events were stored.
type cutRead struct {
	loop.History
	cut  func(*events.Event) bool
	once sync.Once
}

func (c *cutRead) first() bool {
	first := false
	c.once.Do(func() { first = true })
	return first
}

func (c *cutRead) trim(evs []*events.Event) []*events.Event {
	for i, e := range evs {
		if c.cut(e) {
			return evs[:i]
		}
	}
	return evs
}

func (c *cutRead) SessionEvents(ctx context.Context, agent, session string) ([]*events.Event, error) {
	evs, err := c.History.SessionEvents(ctx, agent, session)
	if err == nil && c.first() {
		evs = c.trim(evs)
	}
	return evs, err
}

// A delivery of a run that read the run in its middle (its first worker
// still at work, nobody else on the session) and claims only after the
// run ended: its claim is refused, since the run's end was stored after
// its read, and it reads again and finds the end. The run keeps one end
// and its tool ran once; the late delivery returns the recorded result.
func TestLateDeliveryOfAnEndedRunDoesNotRunItAgain(t *testing.T) {
	records(t, func(t *testing.T, rec record) {
		req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
		calc := &countingTool{name: "calculator", answer: "42"}
		res, err := newEngine(t, rec, loop.Config{Emitter: rec, Model: scripted.New(oneCallScript), Tools: []loop.Tool{calc}}).Run(ctxT(t), req)
		if err != nil || res.Reason != events.ReasonDone {
			t.Fatalf("the first delivery: %+v, %v", res, err)
		}
		for _, at := range []events.Stage{events.StageRunStarted, events.StageToolBefore, events.StageStepCompleted, events.StageRunCompleted} {
			stale := &cutRead{History: rec, cut: func(e *events.Event) bool { return e.RunID == req.RunID && e.Stage == at }}
			late, err := newEngine(t, rec, loop.Config{Emitter: rec, History: stale, Model: scripted.New(oneCallScript), Tools: []loop.Tool{calc}}).Run(ctxT(t), req)
			if err != nil || late.Reason != events.ReasonDone || late.Answer != res.Answer {
				t.Fatalf("a delivery that read the run up to its %s: %+v, %v; want the recorded %+v", at, late, err, res)
			}
			evs := allEvents(t, rec)
			checkRunRecord(t, evs, req.RunID)
			if n := countStages(runEvents(evs, req.RunID), events.StageRunStarted); n != 1 || calc.calls.Load() != 1 {
				t.Fatalf("read up to its %s: %d run.started stored, the tool ran %d times; want one each\n%s", at, n, calc.calls.Load(), seqLines(runEvents(evs, req.RunID)))
			}
		}
	})
}
