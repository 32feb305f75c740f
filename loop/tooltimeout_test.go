package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/loop/tools"
)

// stuckTool blocks in Call until released, ignoring its ctx: a tool stuck
// in a system call.
type stuckTool struct {
	name    string
	entered chan struct{}
	release chan struct{}
}

func newStuckTool(t *testing.T, name string) *stuckTool {
	s := &stuckTool{name: name, entered: make(chan struct{}, 8), release: make(chan struct{})}
	t.Cleanup(func() { close(s.release) })
	return s
}

func (s *stuckTool) Spec() events.ToolSpec { return events.ToolSpec{Name: s.name} }
func (s *stuckTool) Call(context.Context, json.RawMessage) (string, error) {
	s.entered <- struct{}{}
	<-s.release
	return "too late", nil
}

// runWithin runs req on eng and fails the test if Run has not returned
// within d.
func runWithin(t *testing.T, ctx context.Context, eng *loop.Engine, req *events.RunRequest, d time.Duration) (*loop.Result, error) {
	t.Helper()
	type outcome struct {
		res *loop.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := eng.Run(ctx, req)
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-time.After(d):
		t.Fatalf("the run has not ended after %v: a stuck tool holds it", d)
		return nil, nil
	}
}

// A tool call that outlives its timeout, its tool ignoring its ctx, fails
// with ErrToolTimeout at the timeout (and the grace): the model is told,
// tool.failed records it, and the run goes on to its end.
func TestAStuckToolTimesOutAndTheRunGoesOn(t *testing.T) {
	b := looptest.New()
	stuck := newStuckTool(t, "clock")
	eng := newEngine(t, b, loop.Config{
		Tools:       []loop.Tool{stuck, tools.Calculator()},
		ToolTimeout: 200 * time.Millisecond, ToolGrace: 100 * time.Millisecond,
	})
	res, err := runWithin(t, ctxT(t), eng, &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "go"}, 20*time.Second)
	if err != nil || res.Reason != events.ReasonDone {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if !strings.Contains(res.Answer, "did not finish within its timeout of 200ms") {
		t.Errorf("the model was not told of the timeout: %q", res.Answer)
	}
	var failed []events.ToolFailed
	for _, e := range allEvents(t, b) {
		if e.Stage == events.StageToolFailed {
			var p events.ToolFailed
			if err := e.DecodeData(&p); err != nil {
				t.Fatal(err)
			}
			failed = append(failed, p)
		}
	}
	if len(failed) != 1 || failed[0].Call.Name != "clock" || !strings.Contains(failed[0].Error, "timed out") {
		t.Fatalf("tool.failed events: %+v; want one for clock, saying it timed out", failed)
	}
}

// The end of the run's ctx (SIGTERM, Ctrl-C) ends a run whose tool is
// stuck: the tool is abandoned after the grace, not waited for.
func TestARunEndsWithItsContextWhileAToolIsStuck(t *testing.T) {
	b := looptest.New()
	stuck := newStuckTool(t, "clock")
	eng := newEngine(t, b, loop.Config{Tools: []loop.Tool{stuck, tools.Calculator()}, ToolGrace: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(ctxT(t))
	go func() {
		<-stuck.entered
		cancel()
	}()
	res, err := runWithin(t, ctx, eng, &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "go"}, 20*time.Second)
	if err != nil || res.Reason != events.ReasonInterrupted {
		t.Fatalf("Run = %+v, %v; want it interrupted", res, err)
	}
}

func TestToolBoundsAreChecked(t *testing.T) {
	for _, cfg := range []loop.Config{{ToolTimeout: -time.Second}, {ToolGrace: -time.Second}} {
		j := looptest.New()
		cfg.Emitter, cfg.History, cfg.Model = j, j, scripted.New(nil)
		if _, err := loop.New(cfg); !errors.Is(err, loop.ErrInvalidConfig) {
			t.Errorf("New(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
}
