package loop_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
)

// A session read after a compaction starts at it (bus.SessionEvents), so a
// run older than the compaction is not in that read. Such a run, cut off
// mid-step (its tool ran, its worker gone) before another run of its
// session compacted it, does not start over when it runs again: its own
// record is read too, and it ends taken over by the compacting run, the
// tool run once, its intake stored once.
func TestRunCutOffBeforeACompactionDoesNotStartOver(t *testing.T) {
	b := bustest.StartBus(t)
	calc := &countingTool{name: "calculator", answer: "42"}
	reqA := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "first"}
	cut := &failingEmitter{inner: b, limit: 6} // up to the call's tool.before
	if res, err := newEngine(t, b, loop.Config{Emitter: cut, Model: scripted.New(oneCallScript), Tools: []loop.Tool{calc}}).Run(ctxT(t), reqA); !errors.Is(err, loop.ErrUnrecorded) || res != nil && res.Ended {
		t.Fatalf("the cut attempt: %+v, %v; want it not ended", res, err)
	}
	compacting := newEngine(t, b, loop.Config{Model: scripted.New(oneCallScript), Tools: []loop.Tool{&countingTool{name: "calculator", answer: "42"}},
		Compaction: loop.Compaction{MaxTokens: 1, Keep: 2}})
	resB, err := compacting.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "second"})
	if err != nil || resB.Reason != events.ReasonDone {
		t.Fatalf("run B: %+v, %v", resB, err)
	}
	if n := countStages(allEvents(t, b), events.StageCompactAfter); n == 0 {
		t.Fatal("run B did not compact the session")
	}

	again, err := newEngine(t, b, loop.Config{Model: scripted.New(oneCallScript), Tools: []loop.Tool{calc}}).Run(ctxT(t), reqA)
	if again == nil || !again.Ended || !strings.Contains(again.Detail, "taken over by run "+resB.RunID) || calc.calls.Load() != 1 {
		t.Fatalf("run A again: %+v, %v, the tool ran %d times; want it ended, taken over by run B, the tool run once", again, err, calc.calls.Load())
	}
	evs := allEvents(t, b)
	checkRunRecord(t, evs, reqA.RunID)
	checkChains(t, evs)
	if n := countStages(runEvents(evs, reqA.RunID), events.StageIntake); n != 1 {
		t.Fatalf("run A has %d intakes\n%s", n, seqLines(runEvents(evs, reqA.RunID)))
	}
}

// A run that ended before a compaction of its session, delivered again (a
// worker's acknowledgement lost), is not run again: its end is found in
// its own record, past the compacted read, and nothing is written.
func TestEndedRunBeforeACompactionIsNotRunAgain(t *testing.T) {
	b := bustest.StartBus(t)
	calc := &countingTool{name: "calculator", answer: "42"}
	eng := newEngine(t, b, loop.Config{Model: scripted.New(oneCallScript), Tools: []loop.Tool{calc}, Compaction: loop.Compaction{Keep: 2}})
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "first"}
	first, err := eng.Run(ctxT(t), req)
	if err != nil || first.Reason != events.ReasonDone {
		t.Fatalf("the run: %+v, %v", first, err)
	}
	if _, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "second"}); err != nil {
		t.Fatal(err)
	}
	if res, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Compact: true}); err != nil || res.Detail != "compacted" {
		t.Fatalf("loop compact: %+v, %v", res, err)
	}
	before := len(allEvents(t, b))

	again, err := eng.Run(ctxT(t), req)
	if err != nil || !again.Ended || again.Reason != events.ReasonDone || again.Answer != first.Answer {
		t.Fatalf("the run delivered again: %+v, %v; want its recorded end", again, err)
	}
	evs := allEvents(t, b)
	if len(evs) != before || calc.calls.Load() != 2 {
		t.Fatalf("the run delivered again wrote %d events and ran the tool %d more times; want nothing", len(evs)-before, calc.calls.Load()-2)
	}
	checkRunRecord(t, evs, req.RunID)
}
