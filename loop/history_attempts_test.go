package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/loop/tools"
)

// The tools of the recorded histories' scenarios, and the scenarios where
// two attempts run at once (their order fixed by channels, so a recording is
// the same each time).

// toolbox makes the demo's tools (a clock stopped at historyNow, the
// calculator) of an agent, and records every call of them in log (when
// set).
type toolbox struct {
	idempotent []string
	// agent is the agent whose tools they are ("": the history's).
	agent string
	log   *replayLog
}

// toolRun is one call of a tool.
type toolRun struct {
	// Agent is the agent that called it, when not the history's (a
	// sub-agent).
	Agent     string          `json:"agent,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

func (b *toolbox) tools() []loop.Tool {
	var out []loop.Tool
	for _, t := range []loop.Tool{tools.Clock(func() time.Time { return historyNow }), tools.Calculator()} {
		out = append(out, &boxedTool{Tool: t, box: b, idempotent: slices.Contains(b.idempotent, t.Spec().Name)})
	}
	return out
}

type boxedTool struct {
	loop.Tool
	box        *toolbox
	idempotent bool
}

func (t *boxedTool) Spec() events.ToolSpec {
	s := t.Tool.Spec()
	s.Idempotent = t.idempotent
	return s
}

func (t *boxedTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	if l := t.box.log; l != nil {
		l.mu.Lock()
		l.tools = append(l.tools, toolRun{Agent: t.box.agent, Name: t.Spec().Name, Arguments: slices.Clone(args)})
		l.mu.Unlock()
	}
	return t.Tool.Call(ctx, args)
}

// pausedTool pauses its first call until released (a worker paused past
// its lease), then runs the tool.
type pausedTool struct {
	loop.Tool
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func pause(t loop.Tool) *pausedTool {
	return &pausedTool{Tool: t, entered: make(chan struct{}), release: make(chan struct{})}
}

func (p *pausedTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	first := false
	p.once.Do(func() { first = true })
	if first {
		close(p.entered)
		<-p.release
	}
	return p.Tool.Call(ctx, args)
}

// outcome is how a run in another goroutine ended.
type outcome struct {
	res *loop.Result
	err error
}

func goRun(ctx context.Context, eng *loop.Engine, req *events.RunRequest) <-chan outcome {
	done := make(chan outcome, 1)
	go func() {
		res, err := eng.Run(ctx, req)
		done <- outcome{res, err}
	}()
	return done
}

// recordTakeover: the first attempt pauses in the calculator; the second
// (calculator idempotent) takes the run over and ends it.
func recordTakeover(t *testing.T, sc *historyScenario, j *looptest.Journal) {
	req := sc.request("What time is it, and what is 6*7?")
	ts := (&toolbox{}).tools()
	calc := pause(ts[1])
	done := goRun(ctxT(t), sc.engine(t, j, loop.Config{Tools: []loop.Tool{ts[0], calc}}), req)
	<-calc.entered
	res, err := sc.engine(t, j, loop.Config{Tools: (&toolbox{idempotent: []string{"calculator"}}).tools()}).Run(ctxT(t), req)
	if err != nil || res.Reason != events.ReasonDone || !res.Resumed {
		t.Fatalf("the second attempt: %+v, %v", res, err)
	}
	close(calc.release)
	if got := <-done; !errors.Is(got.err, loop.ErrLostRun) || got.res.Ended {
		t.Fatalf("the first attempt: %+v, %v; want ErrLostRun", got.res, got.err)
	}
}

// gateEmitter passes the first limit appends through, then holds the next
// one until released (closing reached when it does).
type gateEmitter struct {
	loop.Emitter
	mu      sync.Mutex
	n       int
	limit   int
	reached chan struct{}
	release chan struct{}
}

func (g *gateEmitter) wait() {
	g.mu.Lock()
	g.n++
	hold := g.n == g.limit+1
	g.mu.Unlock()
	if hold {
		close(g.reached)
		<-g.release
	}
}

func (g *gateEmitter) Append(ctx context.Context, e *events.Event, claim uint64) error {
	g.wait()
	return g.Emitter.Append(ctx, e, claim)
}

func (g *gateEmitter) AppendSync(ctx context.Context, e *events.Event, claim uint64) error {
	g.wait()
	return g.Emitter.AppendSync(ctx, e, claim)
}

func (g *gateEmitter) Claim(ctx context.Context, e *events.Event, last uint64) (uint64, error) {
	g.wait()
	return g.Emitter.Claim(ctx, e, last)
}

// hookedHistory calls after once, after its first read.
type hookedHistory struct {
	*looptest.Journal
	once  sync.Once
	after func()
}

func (h *hookedHistory) SessionEvents(ctx context.Context, agent, session string) ([]*events.Event, error) {
	evs, err := h.Journal.SessionEvents(ctx, agent, session)
	h.once.Do(h.after)
	return evs, err
}

// recordSuperseded: the first attempt pauses in the clock. The second reads
// the record (six events); then the first stores the clock's tool.after
// (seq 7) and is held at its next append; then the second claims the
// session with its run.started (seq 7) and ends the run; then the first is
// released, and its append refused.
func recordSuperseded(t *testing.T, sc *historyScenario, j *looptest.Journal) {
	req := sc.request("What time is it, and what is 6*7?")
	ts := (&toolbox{}).tools()
	clock := pause(ts[0])
	// intake, run.started, step.started, context.assembled, model.responded,
	// tool.before (clock), tool.after (clock) | tool.before (calculator)
	gate := &gateEmitter{Emitter: j, limit: 7, reached: make(chan struct{}), release: make(chan struct{})}
	done := goRun(ctxT(t), sc.engine(t, j, loop.Config{Emitter: gate, Tools: []loop.Tool{clock, ts[1]}}), req)
	<-clock.entered
	h := &hookedHistory{Journal: j, after: func() {
		close(clock.release)
		<-gate.reached
	}}
	res, err := sc.engine(t, j, loop.Config{History: h}).Run(ctxT(t), req)
	if err != nil || res.Reason != events.ReasonDone || !res.Resumed {
		t.Fatalf("the second attempt: %+v, %v", res, err)
	}
	close(gate.release)
	if got := <-done; !errors.Is(got.err, loop.ErrLostRun) || got.res.Ended {
		t.Fatalf("the first attempt: %+v, %v; want ErrLostRun", got.res, got.err)
	}
}

// recordTakeoverByAnotherRun: run A pauses in the clock; run B of the same
// session runs to its end; A wakes and records that it was taken over.
func recordTakeoverByAnotherRun(t *testing.T, sc *historyScenario, j *looptest.Journal) {
	ts := (&toolbox{}).tools()
	clock := pause(ts[0])
	done := goRun(ctxT(t), sc.engine(t, j, loop.Config{Tools: []loop.Tool{clock, ts[1]}}), sc.request("What time is it? (run A)"))
	<-clock.entered
	sc.mustRun(t, j, loop.Config{}, "What is 6*7? (run B)", events.ReasonDone)
	close(clock.release)
	if got := <-done; got.err == nil || !got.res.Ended || !strings.Contains(got.res.Detail, "taken over by run") {
		t.Fatalf("run A: %+v, %v; want it ended, taken over", got.res, got.err)
	}
}
