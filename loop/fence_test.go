package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/tools"
)

// blockingTool blocks its first call until released (a worker paused past
// its lease), and counts calls.
type blockingTool struct {
	name    string
	entered chan struct{}
	release chan struct{}
	calls   atomic.Int32
}

func newBlockingTool(name string) *blockingTool {
	return &blockingTool{name: name, entered: make(chan struct{}), release: make(chan struct{})}
}

func (b *blockingTool) Spec() events.ToolSpec { return events.ToolSpec{Name: b.name} }
func (b *blockingTool) Call(context.Context, json.RawMessage) (string, error) {
	if b.calls.Add(1) == 1 {
		close(b.entered)
		<-b.release
	}
	return "late", nil
}

func runCompletions(evs []*events.Event) int {
	n := 0
	for _, e := range evs {
		if e.Stage == events.StageRunCompleted || e.Stage == events.StageRunFailed {
			n++
		}
	}
	return n
}

// A worker paused in a tool while another worker took its run over can
// neither start another tool nor end the run when it wakes up.
func TestFenceStopsTheOldAttemptOfARun(t *testing.T) {
	b := bustest.StartBus(t)
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
	slowClock := newBlockingTool("clock")
	oldCalc := &countingTool{name: "calculator", answer: "42"}
	old := newEngine(t, b, loop.Config{Tools: []loop.Tool{slowClock, oldCalc}})
	type outcome struct {
		res *loop.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := old.Run(ctxT(t), req)
		done <- outcome{res, err}
	}()
	<-slowClock.entered

	// The run is taken over and finished by another attempt.
	newCalc := &countingTool{name: "calculator", answer: "42"}
	fresh := newEngine(t, b, loop.Config{Tools: []loop.Tool{tools.Clock(nil), newCalc}})
	res, err := fresh.Run(ctxT(t), req)
	if err != nil || res.Reason != events.ReasonDone || !res.Resumed {
		t.Fatalf("the new attempt: %+v, %v", res, err)
	}

	close(slowClock.release)
	got := <-done
	if !errors.Is(got.err, loop.ErrLostRun) || got.res.Ended {
		t.Fatalf("the old attempt: %+v, %v; want ErrLostRun", got.res, got.err)
	}
	if oldCalc.calls.Load() != 0 {
		t.Fatal("the old attempt ran a tool after the run was taken over")
	}
	evs := allEvents(t, b)
	if n := runCompletions(evs); n != 1 {
		t.Fatalf("%d terminal events, want 1", n)
	}
	calcStarts := 0
	for _, e := range evs {
		if e.Stage == events.StageToolBefore && e.Subject == "calculator" {
			calcStarts++
		}
	}
	if calcStarts != 1 || newCalc.calls.Load() != 1 {
		t.Fatalf("calculator started %d times in the stream, ran %d times in the new attempt; want 1 and 1", calcStarts, newCalc.calls.Load())
	}
}

// Another run that starts on the same session takes it over: the older
// run, when it wakes up, records why it ended instead of writing ahead.
func TestFenceEndsAnOlderRunOfTheSession(t *testing.T) {
	b := bustest.StartBus(t)
	slowClock := newBlockingTool("clock")
	calc := &countingTool{name: "calculator", answer: "42"}
	first := newEngine(t, b, loop.Config{Tools: []loop.Tool{slowClock, calc}})
	reqA := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "first"}
	type outcome struct {
		res *loop.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := first.Run(ctxT(t), reqA)
		done <- outcome{res, err}
	}()
	<-slowClock.entered

	second := newEngine(t, b, loop.Config{Tools: []loop.Tool{tools.Clock(nil), tools.Calculator()}})
	resB, err := second.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "second"})
	if err != nil || resB.Reason != events.ReasonDone {
		t.Fatalf("run B: %+v, %v", resB, err)
	}
	close(slowClock.release)
	got := <-done
	if got.err == nil || !got.res.Ended || !strings.Contains(got.res.Detail, "taken over by run "+resB.RunID) {
		t.Fatalf("run A: %+v, %v; want it ended, naming run B", got.res, got.err)
	}
	if calc.calls.Load() != 0 {
		t.Fatal("run A ran a tool after losing the session")
	}
	var failed []events.RunFailed
	for _, e := range runEvents(allEvents(t, b), reqA.RunID) {
		if e.Stage == events.StageRunFailed {
			var p events.RunFailed
			if err := e.DecodeData(&p); err != nil {
				t.Fatal(err)
			}
			failed = append(failed, p)
		}
		if e.Stage == events.StageRunCompleted {
			t.Fatal("run A completed after losing the session")
		}
	}
	if len(failed) != 1 || !strings.Contains(failed[0].Error, "one writer per session") {
		t.Fatalf("run A's run.failed: %+v", failed)
	}
}
