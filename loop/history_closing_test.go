package loop_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
)

// The recorded histories of a run's record closed after its appends were
// refused or cut short: the outcome of a call whose result could not be
// recorded, and the end, chained to the run's last stored event.

func closingScenarios() []*historyScenario {
	return []*historyScenario{
		{
			name: "takeover-outcome-unknown",
			about: "Run A is paused in the clock while run B of the same session claims the session and ends; A, when it wakes, finds its " +
				"tool.after refused, reads the record again and closes it: the clock's outcome unknown (tool.failed with unknown, and a " +
				"tool.after saying so), then run.failed naming B, each numbered and chained after A's last stored event, appended after B's " +
				"events. The conversation answers A's open calls with no result at B's prompt, and leaves out A's late tool.after.",
			record: recordTakeoverByAnotherRun,
		},
		{
			name: "interrupted-mid-tool",
			about: "Run A is interrupted (its context cancelled, as by Ctrl-C) while the calculator runs: the clock's call is done; the " +
				"calculator's outcome is recorded unknown and the run ends interrupted, chained to its last stored event. Run B of the " +
				"same session then sees A's turn with the calculator's unknown outcome as its result.",
			record: recordInterruptedMidTool,
		},
	}
}

// cancelledTool blocks its call until the call's context ends, as a slow
// command does when the run is interrupted, after signalling entered.
type cancelledTool struct {
	loop.Tool
	entered chan struct{}
}

func (c *cancelledTool) Call(ctx context.Context, _ json.RawMessage) (string, error) {
	close(c.entered)
	<-ctx.Done()
	return "", ctx.Err()
}

// recordInterruptedMidTool: run A's context is cancelled while the
// calculator runs; run B follows on the session.
func recordInterruptedMidTool(t *testing.T, sc *historyScenario, j *looptest.Journal) {
	ts := (&toolbox{}).tools()
	calc := &cancelledTool{Tool: ts[1], entered: make(chan struct{})}
	ctx, cancel := context.WithCancel(ctxT(t))
	done := goRun(ctx, sc.engine(t, j, loop.Config{Tools: []loop.Tool{ts[0], calc}}), sc.request("What time is it, and what is 6*7? (run A)"))
	<-calc.entered
	cancel()
	if got := <-done; got.err != nil || got.res.Reason != events.ReasonInterrupted || !got.res.Ended {
		t.Fatalf("run A: %+v, %v; want it ended interrupted", got.res, got.err)
	}
	sc.mustRun(t, j, loop.Config{}, "What is 6*7? (run B)", events.ReasonDone)
}
