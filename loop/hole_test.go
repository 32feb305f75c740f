package loop_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/loop/scripted"
)

// holeEmitter loses the asynchronous append of one seq (as a cluster's
// leader killed mid-publish can) while later ones are stored; the loss
// surfaces at the next flush.
type holeEmitter struct {
	*looptest.Journal
	drop uint64
	mu   sync.Mutex
	lost bool
}

func (h *holeEmitter) Append(ctx context.Context, e *events.Event, claim uint64) error {
	if e.Seq == h.drop {
		h.mu.Lock()
		h.lost = true
		h.mu.Unlock()
		return nil
	}
	return h.Journal.Append(ctx, e, claim)
}

func (h *holeEmitter) Flush(ctx context.Context, run string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost {
		return errLost
	}
	return h.Journal.Flush(ctx, run)
}

// An event lost while a later one of the attempt was stored leaves a hole
// in the run's seqs; the attempt stops unrecorded at its next flush, and the
// attempt that resumes the run reads it up to the hole: its run.started
// takes the missing seq and supersedes what was stored after it, so the
// record ends with seqs 1..N and one hash chain.
func TestResumeFillsAHoleInTheRecord(t *testing.T) {
	j := looptest.New()
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
	// intake 1, run.started 2, step.started 3, context.assembled 4 (lost),
	// model.responded 5 (stored), tool.before 6: a write-ahead point, whose
	// flush fails.
	calc := &countingTool{name: "calculator", answer: "42"}
	cfg := loop.Config{Model: scripted.New(oneCallScript), Tools: []loop.Tool{calc}}
	cfg.Emitter = &holeEmitter{Journal: j, drop: 4}
	res, err := newEngine(t, j, cfg).Run(ctxT(t), req)
	if !errors.Is(err, loop.ErrUnrecorded) || res != nil && res.Ended {
		t.Fatalf("cut attempt: %+v, %v; want it stopped unrecorded", res, err)
	}
	if calc.calls.Load() != 0 {
		t.Fatal("the tool ran although its tool.before was not recorded")
	}
	res, err = newEngine(t, j, loop.Config{Model: scripted.New(oneCallScript), Tools: []loop.Tool{calc}}).Run(ctxT(t), req)
	if err != nil || res.Reason != events.ReasonDone || calc.calls.Load() != 1 {
		t.Fatalf("resumed: %+v, %v, tool ran %d times", res, err, calc.calls.Load())
	}
	checkChains(t, j.Events())
	var started int
	for _, e := range j.Events() {
		if e.Stage == events.StageRunStarted && e.RunID == req.RunID {
			started++
			if started == 2 && e.Seq != 4 {
				t.Fatalf("the resumed run.started has seq %d, want 4 (the hole)", e.Seq)
			}
		}
	}
	if started != 2 {
		t.Fatalf("%d run.started, want 2", started)
	}
}
