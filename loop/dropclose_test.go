package loop_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
)

// A run cut off mid-step whose request gets no more attempts is closed by
// Worker.Close: its call's outcome recorded unknown, run.failed naming why,
// the record still one a verifier accepts. A run that has an end is left
// as it is.
func TestWorkerClosesARunWithoutAttemptsLeft(t *testing.T) {
	records(t, func(t *testing.T, rec record) {
		req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "first"}
		calc := &countingTool{name: "calculator", answer: "42"}
		// intake, run.started, step.started, context.assembled,
		// model.responded and tool.before are stored; the rest is lost.
		cut := &failingEmitter{inner: rec, limit: 6}
		if res, err := newEngine(t, rec, loop.Config{Emitter: cut, Model: scripted.New(oneCallScript), Tools: []loop.Tool{calc}}).Run(ctxT(t), req); !errors.Is(err, loop.ErrUnrecorded) || res != nil && res.Ended {
			t.Fatalf("the cut attempt: %+v, %v; want it not ended", res, err)
		}
		w := loop.NewWorker(newEngine(t, rec, loop.Config{Model: scripted.New(oneCallScript), Tools: []loop.Tool{calc}}), nil)
		why := errors.New("its request was dropped after 5 attempts, the last failing with: the record is unreadable")
		if err := w.Close(ctxT(t), req, why); err != nil {
			t.Fatalf("Close: %v", err)
		}
		evs := allEvents(t, rec)
		end := checkRunRecord(t, evs, req.RunID)
		var failed events.RunFailed
		mustData(t, end, &failed)
		if end.Stage != events.StageRunFailed || failed.Error != why.Error() || end.Step != 1 {
			t.Fatalf("the run ends with %s at step %d: %+v", end.Stage, end.Step, failed)
		}
		if n := countStages(runEvents(evs, req.RunID), events.StageToolFailed); n != 1 || calc.calls.Load() != 1 {
			t.Fatalf("%d tool.failed (outcome unknown) and %d tool runs; want 1 and the one run\n%s", n, calc.calls.Load(), seqLines(runEvents(evs, req.RunID)))
		}
		if err := w.Close(ctxT(t), req, why); err != nil {
			t.Fatalf("Close of a run that ended: %v", err)
		}
		if again := allEvents(t, rec); len(again) != len(evs) || !strings.Contains(seqLines(runEvents(again, req.RunID)), "run.failed") {
			t.Fatalf("Close of a run that ended wrote %d events", len(again)-len(evs))
		}
	})
}
