package loop_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
)

// interrupted runs the demo script on a fresh bus until limit events are
// published, and returns the run's request and the events it stored, in
// seq order.
func interrupted(t *testing.T, limit int, tools []loop.Tool) (*events.RunRequest, []*events.Event) {
	t.Helper()
	b := bustest.StartBus(t)
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
	first := newEngine(t, b, loop.Config{Emitter: &failingEmitter{inner: b, limit: limit}, Tools: tools})
	if res, err := first.Run(ctxT(t), req); err == nil || res != nil && res.Ended {
		t.Fatalf("first attempt: %+v, %v; want it cut off", res, err)
	}
	evs := allEvents(t, b)
	if len(evs) != limit {
		t.Fatalf("first attempt stored %d events, want %d", len(evs), limit)
	}
	return req, evs
}

// A publish sent again after a fault may be stored after later events of
// its run. The resumed run reads its record in seq order: the model's
// reply comes before the tool results that answer it.
func TestResumeReadsEventsInSeqOrder(t *testing.T) {
	clock := &countingTool{name: "clock", answer: "noon"}
	calc := &countingTool{name: "calculator", answer: "42"}
	tools := []loop.Tool{clock, calc}
	// 9 events: intake, run.started, step.started, context.assembled,
	// model.responded, tool.before, tool.after, tool.before, tool.after.
	req, evs := interrupted(t, 9, tools)

	// Stored again on another server with model.responded (seq 5) last.
	b := bustest.StartBus(t)
	scrambled := append(append(append([]*events.Event{}, evs[:4]...), evs[5:]...), evs[4])
	for _, e := range scrambled {
		if err := b.PublishSync(ctxT(t), e); err != nil {
			t.Fatal(err)
		}
	}
	res, err := newEngine(t, b, loop.Config{Tools: tools}).Run(ctxT(t), req)
	if err != nil || res.Reason != events.ReasonDone || res.Answer != "It is noon, and 6*7 = 42. (You asked: go)" {
		t.Fatalf("resumed run: %+v, %v", res, err)
	}
	if clock.calls.Load() != 1 || calc.calls.Load() != 1 {
		t.Fatalf("tools ran again: clock %d, calculator %d", clock.calls.Load(), calc.calls.Load())
	}
	var ca events.ContextAssembled
	for _, e := range runEvents(allEvents(t, b), req.RunID) {
		if e.Stage == events.StageContextAssembled && e.Step == 2 {
			if err := e.DecodeData(&ca); err != nil {
				t.Fatal(err)
			}
		}
	}
	var roles []events.Role
	for _, m := range ca.Messages {
		roles = append(roles, m.Role)
	}
	want := []events.Role{events.RoleUser, events.RoleAssistant, events.RoleTool, events.RoleTool}
	if len(roles) != len(want) || roles[0] != want[0] || roles[1] != want[1] || roles[2] != want[2] || roles[3] != want[3] {
		t.Fatalf("step 2's model saw roles %v, want %v", roles, want)
	}
}

// countingModel counts the model calls.
type countingModel struct {
	loop.Model
	calls atomic.Int32
}

func (m *countingModel) Generate(ctx context.Context, req *loop.ModelRequest) (*loop.ModelResponse, error) {
	m.calls.Add(1)
	return m.Model.Generate(ctx, req)
}

// A run cut off after its last step gave the answer, before its end was
// recorded, ends on resume without asking the model again (the demo script
// has no third reply: asking would fail the run), with the recorded stop
// hook's verdict when there was one.
func TestResumeAfterTheAnswerDoesNotAskTheModelAgain(t *testing.T) {
	stopper := interceptors.NewChain()
	if _, err := stopper.Register(interceptors.Registration{Plugin: "judge", Stage: events.StageStop},
		interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Stop, Reason: "enough"}, nil
		})); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		hooks  *interceptors.Chain
		limit  int // events stored before the cut
		reason string
		detail string
	}{
		// ... step.completed (14), stop (15), run.completed (16)
		{name: "before stop", limit: 14, reason: events.ReasonDone},
		{name: "after stop", limit: 15, reason: events.ReasonDone},
		// ... step.completed (14), hook.decided (15), stop (16), run.completed (17)
		{name: "after a stop hook's stop", hooks: stopper, limit: 16, reason: events.ReasonStopped, detail: "judge: enough"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := bustest.StartBus(t)
			req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
			cfg := loop.Config{Emitter: &failingEmitter{inner: b, limit: tc.limit}}
			if tc.hooks != nil {
				cfg.Hooks = tc.hooks
			}
			if res, err := newEngine(t, b, cfg).Run(ctxT(t), req); err == nil || res != nil && res.Ended {
				t.Fatalf("first attempt: %+v, %v; want it cut off", res, err)
			}
			model := &countingModel{Model: scripted.New(nil)}
			cfg = loop.Config{Model: model}
			if tc.hooks != nil {
				cfg.Hooks = tc.hooks
			}
			res, err := newEngine(t, b, cfg).Run(ctxT(t), req)
			if err != nil || res.Reason != tc.reason || res.Detail != tc.detail || res.Steps != 2 {
				t.Fatalf("resumed: %+v, %v; want %s (%s) after 2 steps", res, err, tc.reason, tc.detail)
			}
			if tc.reason == events.ReasonDone && !strings.HasPrefix(res.Answer, "It is ") {
				t.Fatalf("answer %q", res.Answer)
			}
			if n := model.calls.Load(); n != 0 {
				t.Fatalf("the model was asked %d times on resume", n)
			}
			evs := allEvents(t, b)
			stops := 0
			for i, e := range evs {
				if e.Seq != uint64(i+1) {
					t.Fatalf("event %d (%s) has seq %d", i, e.Stage, e.Seq)
				}
				if e.Stage == events.StageStop {
					stops++
				}
			}
			if stops != 1 || evs[len(evs)-1].Stage != events.StageRunCompleted {
				t.Fatalf("stream after resume: %v", stagesOf(evs))
			}

			// The session's next run sees the first once: its prompt, the
			// reply with tool calls, two tool results, the answer.
			next, err := newEngine(t, b, loop.Config{}).Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "again"})
			if err != nil || next.Reason != events.ReasonDone {
				t.Fatalf("next run: %+v, %v", next, err)
			}
			for _, e := range runEvents(allEvents(t, b), next.RunID) {
				var p events.RunStarted
				if e.Stage == events.StageRunStarted {
					if err := e.DecodeData(&p); err != nil || p.HistoryMessages != 5 || p.Resumed {
						t.Fatalf("next run's run.started: %+v, %v; want 5 messages of history", p, err)
					}
				}
			}
		})
	}
}

// A hook denied the model's reply, and the worker stopped before
// run.completed: the resumed run ends denied, from the recorded decision,
// and the reply's tool calls never run (even though the hook is gone now).
func TestResumeHonoursADenyRecordedOnModelResponded(t *testing.T) {
	guard := interceptors.NewChain()
	if _, err := guard.Register(interceptors.Registration{Plugin: "guard", Stage: events.StageModelResponded, Builtin: true},
		interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Deny, Reason: "no tools"}, nil
		})); err != nil {
		t.Fatal(err)
	}
	b := bustest.StartBus(t)
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
	// intake, run.started, step.started, context.assembled, hook.decided, model.responded | run.completed
	first := newEngine(t, b, loop.Config{Emitter: &failingEmitter{inner: b, limit: 6}, Hooks: guard})
	if res, err := first.Run(ctxT(t), req); err == nil || res != nil && res.Ended {
		t.Fatalf("first attempt: %+v, %v; want it cut off", res, err)
	}
	clock := &countingTool{name: "clock", answer: "noon"}
	calc := &countingTool{name: "calculator", answer: "42"}
	res, err := newEngine(t, b, loop.Config{Tools: []loop.Tool{clock, calc}}).Run(ctxT(t), req)
	if err != nil || res.Reason != events.ReasonDenied || res.Detail != "guard: no tools" {
		t.Fatalf("resumed: %+v, %v; want denied by guard", res, err)
	}
	if clock.calls.Load() != 0 || calc.calls.Load() != 0 {
		t.Fatalf("a denied reply's tools ran on resume: clock %d, calculator %d", clock.calls.Load(), calc.calls.Load())
	}
	for _, e := range allEvents(t, b) {
		if e.Stage == events.StageToolBefore {
			t.Fatal("tool.before published for a denied reply")
		}
	}
}
