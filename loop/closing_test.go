package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/loop/scripted"
)

// records runs f on an in-memory journal and on a real bus.
func records(t *testing.T, f func(t *testing.T, rec record)) {
	t.Run("journal", func(t *testing.T) { f(t, looptest.New()) })
	t.Run("bus", func(t *testing.T) { f(t, bustest.StartBus(t)) })
}

// checkRunRecord checks one run's stored events: seqs 1..N, one hash chain
// (audit.Verifier, unsigned), exactly one terminal event, last, and one
// tool.after per tool.before. It returns the terminal event.
func checkRunRecord(t *testing.T, evs []*events.Event, run string) *events.Event {
	t.Helper()
	mine := runEvents(evs, run)
	checkChains(t, mine)
	var end *events.Event
	before, after := map[string]int{}, map[string]int{}
	for i, e := range mine {
		if e.Seq != uint64(i+1) {
			t.Fatalf("run %s: event %d (%s) has seq %d\n%s", run, i+1, e.Stage, e.Seq, seqLines(mine))
		}
		switch e.Stage {
		case events.StageRunCompleted, events.StageRunFailed:
			if end != nil {
				t.Fatalf("run %s has two ends: %s (seq %d) and %s (seq %d)", run, end.Stage, end.Seq, e.Stage, e.Seq)
			}
			end = e
		case events.StageToolBefore:
			var p events.ToolBefore
			mustData(t, e, &p)
			before[p.Call.ID]++
		case events.StageToolAfter:
			var p events.ToolAfter
			mustData(t, e, &p)
			after[p.Call.ID]++
		}
	}
	if end == nil || end != mine[len(mine)-1] {
		t.Fatalf("run %s: its end is not its last event\n%s", run, seqLines(mine))
	}
	for id, n := range before {
		if n != 1 || after[id] != 1 {
			t.Fatalf("run %s: call %s has %d tool.before and %d tool.after\n%s", run, id, n, after[id], seqLines(mine))
		}
	}
	return end
}

func seqLines(evs []*events.Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "  seq %d %s %s (stored %d)\n", e.Seq, e.Stage, e.Subject, e.Stored)
	}
	return b.String()
}

func mustData(t *testing.T, e *events.Event, v any) {
	t.Helper()
	if err := e.DecodeData(v); err != nil {
		t.Fatalf("%s: %v", e.Stage, err)
	}
}

// checkConversation checks that the session's rebuilt conversation gives
// every tool call exactly one result, right after the reply that made it
// (as providers require).
func checkConversation(t *testing.T, evs []*events.Event) {
	t.Helper()
	s, err := loop.RebuildSession(evs)
	if err != nil {
		t.Fatal(err)
	}
	var want []string // the calls of the last reply still to be answered
	for i, m := range s.Messages {
		switch {
		case m.Role == events.RoleTool:
			if len(want) == 0 || want[0] != m.ToolCallID {
				t.Fatalf("message %d: a result for %s, want one for %v\n%+v", i, m.ToolCallID, want, s.Messages)
			}
			want = want[1:]
		case len(want) > 0:
			t.Fatalf("message %d (%s) before the results of %v\n%+v", i, m.Role, want, s.Messages)
		default:
			for _, c := range m.ToolCalls {
				want = append(want, c.ID)
			}
		}
	}
}

// A run whose session another run took over while its tool ran ends with
// the tool's outcome recorded as unknown and run.failed naming that run,
// chained to its last stored event: the appends the fence refused leave
// no hole in its seqs or its hash chain.
func TestTakenOverRunRecordsTheOutcomeAndItsEnd(t *testing.T) {
	records(t, func(t *testing.T, rec record) {
		calc := pause(&countingTool{name: "calculator", answer: "42"})
		first := newEngine(t, rec, loop.Config{Model: scripted.New(oneCallScript), Tools: []loop.Tool{calc}})
		reqA := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "first"}
		done := goRun(ctxT(t), first, reqA)
		<-calc.entered

		second := newEngine(t, rec, loop.Config{Model: scripted.New(oneCallScript), Tools: []loop.Tool{&countingTool{name: "calculator", answer: "42"}}})
		resB, err := second.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "second"})
		if err != nil || resB.Reason != events.ReasonDone {
			t.Fatalf("run B: %+v, %v", resB, err)
		}
		close(calc.release)
		got := <-done
		if got.err == nil || got.res == nil || !got.res.Ended || !strings.Contains(got.res.Detail, "taken over by run "+resB.RunID) {
			t.Fatalf("run A: %+v, %v; want it ended, naming run B", got.res, got.err)
		}

		evs := allEvents(t, rec)
		end := checkRunRecord(t, evs, reqA.RunID)
		checkRunRecord(t, evs, resB.RunID)
		var failed events.RunFailed
		mustData(t, end, &failed)
		if end.Stage != events.StageRunFailed || !strings.Contains(failed.Error, "taken over by run "+resB.RunID) {
			t.Fatalf("run A ends with %s %+v", end.Stage, failed)
		}
		var unknown []events.ToolFailed
		for _, e := range runEvents(evs, reqA.RunID) {
			if e.Stage == events.StageToolFailed {
				var p events.ToolFailed
				mustData(t, e, &p)
				unknown = append(unknown, p)
			}
		}
		if len(unknown) != 1 || !unknown[0].Unknown || !strings.Contains(unknown[0].Error, "outcome unknown") {
			t.Fatalf("run A's tool.failed: %+v; want the calculator's outcome unknown", unknown)
		}
		checkConversation(t, evs)
	})
}

// An attempt superseded by another attempt of its run writes nothing more,
// even when a later run of the session holds the session's last claim:
// the run keeps its one end (the record is read before anything is
// written, not only the session's claim).
func TestSupersededAttemptWritesNoSecondEnd(t *testing.T) {
	records(t, func(t *testing.T, rec record) {
		req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
		calc := pause(&countingTool{name: "calculator", answer: "42"})
		old := newEngine(t, rec, loop.Config{Model: scripted.New(oneCallScript), Tools: []loop.Tool{calc}})
		done := goRun(ctxT(t), old, req)
		<-calc.entered

		fresh := newEngine(t, rec, loop.Config{Model: scripted.New(oneCallScript), Tools: []loop.Tool{&countingTool{name: "calculator", answer: "42", idempotent: true}}})
		if res, err := fresh.Run(ctxT(t), req); err != nil || res.Reason != events.ReasonDone || !res.Resumed {
			t.Fatalf("the attempt that took the run over: %+v, %v", res, err)
		}
		next, err := fresh.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "next"})
		if err != nil || next.Reason != events.ReasonDone {
			t.Fatalf("the session's next run: %+v, %v", next, err)
		}
		close(calc.release)
		got := <-done
		if !errors.Is(got.err, loop.ErrLostRun) || got.res != nil && got.res.Ended {
			t.Fatalf("the old attempt: %+v, %v; want ErrLostRun and nothing written", got.res, got.err)
		}
		evs := allEvents(t, rec)
		checkRunRecord(t, evs, req.RunID)
		checkRunRecord(t, evs, next.RunID)
		checkConversation(t, evs)
	})
}

// ctxTool blocks until its call's context ends, as a slow command does
// when the run is interrupted.
type ctxTool struct {
	entered chan struct{}
	once    sync.Once
}

func (c *ctxTool) Spec() events.ToolSpec { return events.ToolSpec{Name: "calculator"} }
func (c *ctxTool) Call(ctx context.Context, _ json.RawMessage) (string, error) {
	c.once.Do(func() { close(c.entered) })
	<-ctx.Done()
	return "", ctx.Err()
}

// A run interrupted while a tool runs (its caller's context cancelled: a
// Ctrl-C) ends with run.completed reason interrupted, the call's outcome
// recorded as unknown, every event chained to the one stored before it.
func TestInterruptedRunRecordsItsEnd(t *testing.T) {
	records(t, func(t *testing.T, rec record) {
		tool := &ctxTool{entered: make(chan struct{})}
		eng := newEngine(t, rec, loop.Config{Model: scripted.New(oneCallScript), Tools: []loop.Tool{tool}})
		ctx, cancel := context.WithCancel(ctxT(t))
		req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
		done := goRun(ctx, eng, req)
		<-tool.entered
		cancel()
		got := <-done
		if got.err != nil || got.res == nil || got.res.Reason != events.ReasonInterrupted || !got.res.Ended {
			t.Fatalf("interrupted run: %+v, %v", got.res, got.err)
		}
		evs := allEvents(t, rec)
		end := checkRunRecord(t, evs, req.RunID)
		var rc events.RunCompleted
		mustData(t, end, &rc)
		if rc.Reason != events.ReasonInterrupted {
			t.Fatalf("run.completed %+v", rc)
		}
		var sawUnknown bool
		for _, e := range runEvents(evs, req.RunID) {
			var p events.ToolFailed
			if e.Stage == events.StageToolFailed && e.DecodeData(&p) == nil && p.Unknown {
				sawUnknown = true
			}
		}
		if !sawUnknown {
			t.Fatalf("the interrupted call's outcome is not recorded unknown\n%s", seqLines(runEvents(evs, req.RunID)))
		}
	})
}

// handBack is a cancellation cause saying the run is handed back, as the
// run queue's is when a stopping worker gives its runs to other workers.
type handBack struct{}

func (handBack) Error() string    { return "handed back" }
func (handBack) HandedBack() bool { return true }

// A run whose context is cancelled to hand it back (its worker stopping)
// records no end: the call under way gets no outcome, the run no
// run.completed, and the attempt's error says it is not ended; resumed, it
// records the call's outcome unknown, never calling the tool again, and
// ends done.
func TestHandedBackRunRecordsNoEnd(t *testing.T) {
	records(t, func(t *testing.T, rec record) {
		tool := &ctxTool{entered: make(chan struct{})}
		eng := newEngine(t, rec, loop.Config{Model: scripted.New(oneCallScript), Tools: []loop.Tool{tool}})
		ctx, cancel := context.WithCancelCause(ctxT(t))
		req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
		done := goRun(ctx, eng, req)
		<-tool.entered
		cancel(handBack{})
		got := <-done
		if got.err == nil || !errors.Is(got.err, handBack{}) || (got.res != nil && got.res.Ended) {
			t.Fatalf("handed-back run: %+v, %v; want no end and the cause", got.res, got.err)
		}
		for _, e := range runEvents(allEvents(t, rec), req.RunID) {
			switch e.Stage {
			case events.StageRunCompleted, events.StageRunFailed, events.StageToolFailed, events.StageToolAfter:
				t.Fatalf("a handed-back run recorded %s\n%s", e.Stage, seqLines(runEvents(allEvents(t, rec), req.RunID)))
			}
		}
		again := &ctxTool{entered: make(chan struct{})}
		eng2 := newEngine(t, rec, loop.Config{Model: scripted.New(oneCallScript), Tools: []loop.Tool{again}})
		res, err := eng2.Run(ctxT(t), req)
		if err != nil || res.Reason != events.ReasonDone || !res.Resumed {
			t.Fatalf("resumed run: %+v, %v; want done", res, err)
		}
		select {
		case <-again.entered:
			t.Fatal("the resumed run called the tool cut short again")
		default:
		}
	})
}

// slowTool answers after a pause, so that a run submitted at the same
// moment on the same session claims it while the tool runs.
type slowTool struct{ d time.Duration }

func (s slowTool) Spec() events.ToolSpec { return events.ToolSpec{Name: "calculator"} }
func (s slowTool) Call(ctx context.Context, _ json.RawMessage) (string, error) {
	select {
	case <-time.After(s.d):
		return "42", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Two runs started at the same moment on one session: the later claim
// takes the session over, and the run that loses it ends once, with
// run.failed naming the other, chained to its last stored event; every
// call has one result recorded, and both records verify.
func TestTwoRunsAtOnceOnOneSession(t *testing.T) {
	b := bustest.StartBus(t)
	lost := 0
	for try := range 4 {
		session := fmt.Sprintf("s%d", try)
		reqs := []*events.RunRequest{
			{RunID: events.NewID(), AgentID: "demo", SessionID: session, Prompt: "one"},
			{RunID: events.NewID(), AgentID: "demo", SessionID: session, Prompt: "two"},
		}
		var outs [2]<-chan outcome
		start := make(chan struct{})
		for i, req := range reqs {
			eng := newEngine(t, b, loop.Config{Model: scripted.New(oneCallScript), Tools: []loop.Tool{slowTool{200 * time.Millisecond}}})
			c := make(chan outcome, 1)
			outs[i] = c
			go func() {
				<-start
				res, err := eng.Run(ctxT(t), req)
				c <- outcome{res, err}
			}()
		}
		close(start)
		var got [2]outcome
		for i := range outs {
			got[i] = <-outs[i]
			if got[i].res == nil || !got[i].res.Ended {
				t.Fatalf("try %d: run %d did not end: %+v, %v", try, i, got[i].res, got[i].err)
			}
		}
		evs := allEvents(t, b)
		for i, req := range reqs {
			end := checkRunRecord(t, evs, req.RunID)
			if end.Stage == events.StageRunFailed {
				lost++
				var p events.RunFailed
				mustData(t, end, &p)
				if other := reqs[1-i].RunID; !strings.Contains(p.Error, "taken over by run "+other) {
					t.Fatalf("try %d: run %d failed: %q; want it taken over by %s", try, i, p.Error, other)
				}
			}
		}
		var sess []*events.Event
		for _, e := range evs {
			if e.SessionID == session {
				sess = append(sess, e)
			}
		}
		checkConversation(t, sess)
	}
	t.Logf("%d of 4 tries ended one run taken over by the other", lost)
}

// Emitter.AppendAfter, in memory as on the bus: an event is stored only
// while the session's last stored event is the one the writer read, with no
// condition on the session's claim; otherwise the error is a loop.Claimed
// naming the first event stored since.
func TestAppendAfterFencesOnTheSession(t *testing.T) {
	records(t, func(t *testing.T, rec record) {
		ctx := ctxT(t)
		newEvent := func(run string, seq uint64) *events.Event {
			e, err := events.New(events.StageStepStarted, events.Meta{Source: "test", AgentID: "demo", SessionID: "s1", RunID: run, Step: 1}, events.StepStarted{Step: 1})
			if err != nil {
				t.Fatal(err)
			}
			e.Seq = seq
			return e
		}
		a, b := events.NewID(), events.NewID()
		first, err := rec.AppendAfter(ctx, newEvent(a, 1), 0)
		if err != nil {
			t.Fatal(err)
		}
		claim, err := events.New(events.StageRunStarted, events.Meta{Source: "test", AgentID: "demo", SessionID: "s1", RunID: b, Seq: 1}, events.RunStarted{Prompt: "b"})
		if err != nil {
			t.Fatal(err)
		}
		claimed, err := rec.Claim(ctx, claim, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = rec.AppendAfter(ctx, newEvent(a, 2), first)
		var c loop.Claimed
		if !errors.As(err, &c) || c.ClaimedBy().ID != claim.ID || c.ClaimedBy().Stored != claimed {
			t.Fatalf("an append after a stale read: %v; want a Claimed naming the claim stored since", err)
		}
		at, err := rec.AppendAfter(ctx, newEvent(a, 2), claimed)
		if err != nil || at <= claimed {
			t.Fatalf("an append after the session's last event, another run's claim: %d, %v", at, err)
		}
		if err := rec.AppendSync(ctx, newEvent(b, 2), claimed); err != nil {
			t.Fatalf("the claim holder's append after it: %v (AppendAfter moved no claim)", err)
		}
	})
}

// A closed run's late tool.after (stored after another run's turn began)
// is left out of the conversation whether the rebuild reads the session in
// stream order or run by run (as it does once a run's events are stored
// out of seq order): the other run's turn answered the call already, and
// the conversation is the same either way.
func TestLateResultLeftOutInEitherOrder(t *testing.T) {
	evs, err := loadHistory("takeover-outcome-unknown")
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range evs {
		e.Stored = uint64(i + 1)
	}
	inOrder, err := loop.RebuildSession(evs)
	if err != nil {
		t.Fatal(err)
	}
	checkConversation(t, evs)
	// Run B's step.completed of step 1 sent again after a fault and stored
	// last: B's events are no longer in seq order in the stream.
	i := slices.IndexFunc(evs, func(e *events.Event) bool { return e.Stage == events.StageStepCompleted })
	moved := slices.Clone(evs)
	e := moved[i]
	moved = append(slices.Delete(moved, i, i+1), e)
	late := *e
	late.Stored = uint64(len(evs) + 1)
	moved[len(moved)-1] = &late
	byRun, err := loop.RebuildSession(moved)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(inOrder.Messages, byRun.Messages) {
		t.Fatalf("the conversation read run by run differs:\n%+v\nin stream order:\n%+v", byRun.Messages, inOrder.Messages)
	}
}

// A run cut off mid-step (its worker gone once the call's tool.before was
// stored), whose session another run took and ended meanwhile, does not
// go on when it runs again: the other run's turn came after its own, so it
// ends as a run whose session was taken over: the call's outcome recorded
// unknown, run.failed naming the other run. The model is not asked again,
// the tool does not run again, and the session's conversation has no turn
// after the other run's that belongs before it.
func TestCutOffRunWhoseSessionWasTakenEndsTakenOver(t *testing.T) {
	records(t, func(t *testing.T, rec record) {
		reqA := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "first"}
		calc := &countingTool{name: "calculator", answer: "42"}
		// intake, run.started, step.started, context.assembled,
		// model.responded and tool.before are stored; the rest is lost.
		cut := &failingEmitter{inner: rec, limit: 6}
		if res, err := newEngine(t, rec, loop.Config{Emitter: cut, Model: scripted.New(oneCallScript), Tools: []loop.Tool{calc}}).Run(ctxT(t), reqA); !errors.Is(err, loop.ErrUnrecorded) || res != nil && res.Ended {
			t.Fatalf("the cut attempt: %+v, %v; want it not ended", res, err)
		}
		if n := countStages(runEvents(allEvents(t, rec), reqA.RunID), events.StageToolBefore); n != 1 || calc.calls.Load() != 1 {
			t.Fatalf("the cut attempt stored %d tool.before and ran the tool %d times; want the tool run, its tool.before stored", n, calc.calls.Load())
		}
		resB, err := newEngine(t, rec, loop.Config{Model: scripted.New(oneCallScript), Tools: []loop.Tool{&countingTool{name: "calculator", answer: "42"}}}).
			Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "second"})
		if err != nil || resB.Reason != events.ReasonDone {
			t.Fatalf("run B: %+v, %v", resB, err)
		}

		model := &countingModel{Model: scripted.New(oneCallScript)}
		again, err := newEngine(t, rec, loop.Config{Model: model, Tools: []loop.Tool{calc}}).Run(ctxT(t), reqA)
		if again == nil || !again.Ended || again.Reason != loop.ReasonFailed || !strings.Contains(again.Detail, "taken over by run "+resB.RunID) {
			t.Fatalf("run A again: %+v, %v; want it ended, taken over by run B", again, err)
		}
		if model.calls.Load() != 0 || calc.calls.Load() != 1 {
			t.Fatalf("run A again asked the model %d times and ran the tool %d times in all; want no model call and the one run", model.calls.Load(), calc.calls.Load())
		}
		evs := allEvents(t, rec)
		end := checkRunRecord(t, evs, reqA.RunID)
		checkRunRecord(t, evs, resB.RunID)
		var failed events.RunFailed
		mustData(t, end, &failed)
		if end.Stage != events.StageRunFailed || !strings.Contains(failed.Error, "taken over by run "+resB.RunID) {
			t.Fatalf("run A ends with %s %+v", end.Stage, failed)
		}
		if n := countStages(runEvents(evs, reqA.RunID), events.StageRunStarted); n != 1 {
			t.Fatalf("run A has %d run.started: it claimed the session back\n%s", n, seqLines(runEvents(evs, reqA.RunID)))
		}
		unknown := 0
		for _, e := range runEvents(evs, reqA.RunID) {
			var p events.ToolFailed
			if e.Stage == events.StageToolFailed && e.DecodeData(&p) == nil && p.Unknown {
				unknown++
			}
		}
		if unknown != 1 {
			t.Fatalf("run A: %d calls recorded with their outcome unknown, want 1\n%s", unknown, seqLines(runEvents(evs, reqA.RunID)))
		}
		checkConversation(t, evs)
		s, err := loop.RebuildSession(evs)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(s.Messages); i++ {
			if s.Messages[i].Role == events.RoleAssistant && s.Messages[i-1].Role == events.RoleAssistant {
				t.Fatalf("message %d: an assistant message after another: %+v", i, s.Messages)
			}
		}
	})
}
