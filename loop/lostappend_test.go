package loop_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
)

// dropEmitter loses one asynchronous append (the n-th Append) the way a
// fault loses one: the append returns, nothing is stored, the appends after
// it are stored, and the next flush reports the loss.
type dropEmitter struct {
	loop.Emitter
	mu      sync.Mutex
	n, drop int
	lost    bool
}

func (d *dropEmitter) Append(ctx context.Context, e *events.Event, claim uint64) error {
	d.mu.Lock()
	d.n++
	drop := d.n == d.drop
	d.lost = d.lost || drop
	d.mu.Unlock()
	if drop {
		return nil
	}
	return d.Emitter.Append(ctx, e, claim)
}

func (d *dropEmitter) Flush(ctx context.Context, run string) error {
	if err := d.Emitter.Flush(ctx, run); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lost {
		return errLost
	}
	return nil
}

// A run one of whose appends was lost while later ones were stored, whose
// session another run then took over, cannot be resumed to fill the gap:
// its next delivery ends it, the end naming the seq never stored, and
// verification reads the gap as lost, not removed (the run is intact).
func TestLostAppendInATakenSessionEndsTheRun(t *testing.T) {
	records(t, func(t *testing.T, rec record) {
		reqA := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "first"}
		calc := &countingTool{name: "calculator", answer: "42"}
		// The second asynchronous append is lost.
		cut := &dropEmitter{Emitter: rec, drop: 2}
		if res, err := newEngine(t, rec, loop.Config{Emitter: cut, Model: scripted.New(oneCallScript), Tools: []loop.Tool{calc}}).Run(ctxT(t), reqA); !errors.Is(err, loop.ErrUnrecorded) || res != nil && res.Ended {
			t.Fatalf("the cut attempt: %+v, %v; want it not ended", res, err)
		}
		mine := runEvents(allEvents(t, rec), reqA.RunID)
		var seqs []uint64
		for _, e := range mine {
			seqs = append(seqs, e.Seq)
		}
		var gap uint64
		for i, s := range seqs {
			if s != uint64(i+1) {
				gap = uint64(i + 1)
				break
			}
		}
		if gap == 0 {
			t.Fatalf("run A's stored seqs %v; want a gap with later ones stored", seqs)
		}
		resB, err := newEngine(t, rec, loop.Config{Model: scripted.New(oneCallScript), Tools: []loop.Tool{&countingTool{name: "calculator", answer: "42"}}}).
			Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "second"})
		if err != nil || resB.Reason != events.ReasonDone {
			t.Fatalf("run B: %+v, %v", resB, err)
		}

		again, err := newEngine(t, rec, loop.Config{Model: scripted.New(oneCallScript), Tools: []loop.Tool{calc}}).Run(ctxT(t), reqA)
		if again == nil || !again.Ended || !strings.Contains(again.Detail, "taken over by run "+resB.RunID) {
			t.Fatalf("run A again: %+v, %v; want it ended, taken over by run B", again, err)
		}
		evs := allEvents(t, rec)
		mine = runEvents(evs, reqA.RunID)
		end := mine[len(mine)-1]
		failed, err := events.Data[events.RunFailed](end)
		if end.Stage != events.StageRunFailed || err != nil || !slices.Equal(failed.Lost, []uint64{gap}) || !strings.Contains(failed.Error, fmt.Sprintf("seq %d was never stored", gap)) {
			t.Fatalf("run A ends with %s %+v (%v); want run.failed naming seq %d lost\n%s", end.Stage, failed, err, gap, seqLines(mine))
		}
		ends := 0
		for _, e := range mine {
			if e.Stage.Terminal() {
				ends++
			}
		}
		if ends != 1 {
			t.Fatalf("run A has %d ends\n%s", ends, seqLines(mine))
		}
		var v audit.Verifier
		for _, e := range evs {
			v.Add(e)
		}
		for _, vd := range v.Verdicts() {
			if vd.RunID != reqA.RunID {
				if !vd.Intact {
					t.Errorf("run %s: %+v", vd.RunID, vd.Problems)
				}
				continue
			}
			kinds := map[string]int{}
			for _, p := range vd.Problems {
				kinds[p.Kind]++
			}
			if !vd.Intact || kinds[audit.ProblemLost] != 1 || kinds[audit.ProblemRemoved] != 0 {
				t.Fatalf("run A's verdict: intact %v, problems %+v; want intact with seq %d noted lost", vd.Intact, vd.Problems, gap)
			}
		}
	})
}
