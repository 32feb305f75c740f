package integration

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/loop/tools"
)

// gatedClaims holds an attempt's claim of its session until the test
// opens the gate: the attempt has read the session and is about to claim
// it.
type gatedClaims struct {
	loop.Emitter
	reached chan struct{} // closed when the claim is reached
	open    chan struct{} // close to let it through
	once    atomic.Bool
}

func (g *gatedClaims) wait(ctx context.Context) {
	if g.once.CompareAndSwap(false, true) {
		close(g.reached)
		select {
		case <-g.open:
		case <-ctx.Done():
		}
	}
}

func (g *gatedClaims) Claim(ctx context.Context, e *events.Event, last uint64) (uint64, error) {
	g.wait(ctx)
	return g.Emitter.Claim(ctx, e, last)
}

func (g *gatedClaims) Reclaim(ctx context.Context, e *events.Event, last, seen uint64) (uint64, error) {
	g.wait(ctx)
	return g.Emitter.Reclaim(ctx, e, last, seen)
}

// Two attempts of one run, both alive (as when a server that lost its
// consumer state redelivers a run its first worker still runs): the second
// reads the session while the first is at a point of the run, and claims
// it only once the first has gone on (its tool ran, or the run ended).
// The second attempt's claim is refused because the session changed since
// it read it; it reads again and goes on from the record, so the stream
// holds one terminal event, no event of the first attempt is superseded,
// and the calculator ran once. (Fenced on the session's last claim alone,
// the second claim was stored after the first attempt's events, which the
// supersede rule then dropped: the calculator ran twice and the run had
// two run.completed.)
func TestResumedAttemptClaimsOnlyTheSessionItRead(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   func(*events.Event) bool // where the first attempt lets the second read
		runs int                      // calculator executions
	}{
		{"before-the-end", func(e *events.Event) bool { return e.Stage == events.StageStop }, 1},
		{"before-a-tool-call", func(e *events.Event) bool { return e.Stage == events.StageModelResponded && e.Step == 2 }, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t, time.Minute)
			b := bustest.StartBus(t)
			var calcRuns atomic.Int32
			calc := tools.Calculator()
			counting := loop.ToolFunc(calc.Spec(), func(ctx context.Context, args json.RawMessage) (string, error) {
				calcRuns.Add(1)
				return calc.Call(ctx, args)
			})
			engine := func(em loop.Emitter) *loop.Engine {
				eng, err := loop.New(loop.Config{Emitter: em, History: b, Model: scripted.New(threeStepScript(0)),
					Tools: []loop.Tool{tools.Clock(nil), counting}})
				if err != nil {
					t.Fatal(err)
				}
				return eng
			}
			req := &events.RunRequest{RunID: events.NewID(), AgentID: "race", SessionID: "s1", Prompt: "time and sum?"}

			second := &gatedClaims{Emitter: b, reached: make(chan struct{}), open: make(chan struct{})}
			type outcome struct {
				res *loop.Result
				err error
			}
			secondDone := make(chan outcome, 1)
			first := &faultEmitter{Emitter: b, at: tc.at, fault: func() {
				go func() {
					res, err := engine(second).Run(ctx, req)
					secondDone <- outcome{res, err}
				}()
				select {
				case <-second.reached:
				case <-ctx.Done():
				}
			}}
			res, err := engine(first).Run(ctx, req)
			if err != nil || res.Reason != events.ReasonDone {
				t.Fatalf("first attempt: %v %+v", err, res)
			}
			close(second.open)
			out := <-secondDone
			t.Logf("second attempt: %v (%+v)", out.err, out.res)

			evs := streamEvents(t, ctx, b)
			checkUniqueIDs(t, evs)
			raw := byRun(evs)[req.RunID]
			eff, superseded := effectiveRun(raw)
			terminals := 0
			for _, e := range raw {
				if e.Stage == events.StageRunCompleted || e.Stage == events.StageRunFailed {
					terminals++
				}
			}
			if terminals != 1 || superseded != 0 || int(calcRuns.Load()) != tc.runs {
				t.Fatalf("%d terminal events, %d superseded events, calculator ran %d times; want 1, 0, %d\n%s",
					terminals, superseded, calcRuns.Load(), tc.runs, seqStages(raw))
			}
			if rc := completed(t, checkRun(t, req.RunID, eff)); rc.Reason != events.ReasonDone {
				t.Fatalf("run ended %s %s", rc.Reason, rc.Detail)
			}
		})
	}
}
