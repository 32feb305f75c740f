package loop_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/oklog/ulid/v2"
)

func TestRunTwoToolCallsPublishesEveryStageInOrder(t *testing.T) {
	b := looptest.New()
	eng := newEngine(t, b, loop.Config{})
	res, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "what is 6*7?"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Reason != events.ReasonDone || !strings.Contains(res.Answer, "6*7 = 42") || res.Steps != 2 {
		t.Fatalf("result = %+v", res)
	}
	evs := allEvents(t, b)
	want := []events.Stage{
		events.StageIntake, events.StageRunStarted,
		events.StageStepStarted, events.StageContextAssembled, events.StageModelResponded,
		events.StageToolBefore, events.StageToolAfter, events.StageToolBefore, events.StageToolAfter,
		events.StageStepCompleted,
		events.StageStepStarted, events.StageContextAssembled, events.StageModelResponded, events.StageStepCompleted,
		events.StageStop, events.StageRunCompleted,
	}
	if got := stagesOf(evs); !slices.Equal(got, want) {
		t.Fatalf("stages:\n got %v\nwant %v", got, want)
	}
	if res.Events != len(want) {
		t.Errorf("Result.Events = %d, want %d", res.Events, len(want))
	}
	ids := map[string]bool{}
	for i, e := range evs {
		if _, err := ulid.ParseStrict(e.ID); err != nil {
			t.Errorf("event %d id %q is not a ULID", i, e.ID)
		}
		if ids[e.ID] {
			t.Errorf("duplicate id %s", e.ID)
		}
		ids[e.ID] = true
		if e.Seq != uint64(i+1) {
			t.Errorf("event %d (%s) seq %d, want %d", i, e.Stage, e.Seq, i+1)
		}
		if e.RunID != res.RunID || e.AgentID != "demo" || e.SessionID != "s1" {
			t.Errorf("event %d ids %s/%s/%s", i, e.AgentID, e.SessionID, e.RunID)
		}
		if _, err := e.Payload(); err != nil {
			t.Errorf("event %d (%s) payload: %v", i, e.Stage, err)
		}
	}
	if evs[5].Subject != "clock" || evs[7].Subject != "calculator" {
		t.Errorf("tool events' subjects = %q, %q", evs[5].Subject, evs[7].Subject)
	}
	var rc events.RunCompleted
	if err := evs[len(evs)-1].DecodeData(&rc); err != nil || rc.Answer != res.Answer || rc.Events != len(want)-1 {
		t.Fatalf("run.completed = %+v, %v", rc, err)
	}
}

func TestSecondRunInSessionSeesTheFirst(t *testing.T) {
	b := looptest.New()
	eng := newEngine(t, b, loop.Config{})
	first, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "first question"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "second question"})
	if err != nil {
		t.Fatal(err)
	}
	var ca *events.ContextAssembled
	var started events.RunStarted
	for _, e := range runEvents(allEvents(t, b), second.RunID) {
		switch e.Stage {
		case events.StageContextAssembled:
			if ca == nil {
				ca = &events.ContextAssembled{}
				if err := e.DecodeData(ca); err != nil {
					t.Fatal(err)
				}
			}
		case events.StageRunStarted:
			if err := e.DecodeData(&started); err != nil {
				t.Fatal(err)
			}
		}
	}
	if ca == nil {
		t.Fatal("second run has no context.assembled")
	}
	// first run: user, assistant(2 calls), tool, tool, assistant; then the second prompt.
	if started.HistoryMessages != 5 || len(ca.Messages) != 6 {
		t.Fatalf("history %d, messages %d: %+v", started.HistoryMessages, len(ca.Messages), ca.Messages)
	}
	if ca.Messages[0].Content != "first question" || ca.Messages[4].Content != first.Answer || ca.Messages[5].Content != "second question" {
		t.Fatalf("second run's context does not hold the first run: %+v", ca.Messages)
	}
	// A third engine with no memory of its own rebuilds the same session.
	sess, err := b.SessionEvents(ctxT(t), "demo", "s1")
	if err != nil {
		t.Fatal(err)
	}
	rebuilt, err := loop.RebuildSession(sess)
	if err != nil || len(rebuilt.Messages) != 10 || rebuilt.Runs != 2 {
		t.Fatalf("rebuilt %d messages over %d runs, %v", len(rebuilt.Messages), rebuilt.Runs, err)
	}
}

func TestInterruptedRunResumesWithoutRerunningRecordedTools(t *testing.T) {
	b := looptest.New()
	clock := &countingTool{name: "clock", answer: "noon"}
	calc := &countingTool{name: "calculator", answer: "42"}
	tools := []loop.Tool{clock, calc}
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}

	// The first worker loses its connection right after the clock's tool.after
	// (event 7: intake, run.started, step.started, context.assembled,
	// model.responded, tool.before, tool.after).
	lossy := &failingEmitter{inner: b, limit: 7}
	first := newEngine(t, b, loop.Config{Emitter: lossy, Tools: tools})
	if _, err := first.Run(ctxT(t), req); !errors.Is(err, errLost) {
		t.Fatalf("first attempt: %v, want the connection loss", err)
	}
	if got := stagesOf(allEvents(t, b)); len(got) != 7 || got[6] != events.StageToolAfter {
		t.Fatalf("after the loss the stream holds %v", got)
	}

	second := newEngine(t, b, loop.Config{Tools: tools})
	res, err := second.Run(ctxT(t), req)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if !res.Resumed || res.Reason != events.ReasonDone || res.Answer != "It is noon, and 6*7 = 42. (You asked: go)" {
		t.Fatalf("resumed result = %+v", res)
	}
	if clock.calls.Load() != 1 || calc.calls.Load() != 1 {
		t.Fatalf("tool calls: clock %d, calculator %d; want 1 each", clock.calls.Load(), calc.calls.Load())
	}
	evs := allEvents(t, b)
	for i, e := range evs {
		if e.Seq != uint64(i+1) {
			t.Fatalf("event %d (%s) seq %d after resume", i, e.Stage, e.Seq)
		}
	}
	// The second attempt starts with a run.started that says it resumed.
	if n := len(evs); evs[n-1].Stage != events.StageRunCompleted || n != 17 || evs[7].Stage != events.StageRunStarted {
		t.Fatalf("stream after resume: %v", stagesOf(evs))
	}
	var started events.RunStarted
	if err := evs[7].DecodeData(&started); err != nil || !started.Resumed || started.Prompt != "go" || started.HistoryMessages != 0 {
		t.Fatalf("run.started of the resumed attempt: %+v, %v", started, err)
	}

	// A run that already ended is not run again.
	again, err := second.Run(ctxT(t), req)
	if err != nil || again.Answer != res.Answer || len(allEvents(t, b)) != 17 {
		t.Fatalf("re-running an ended run: %+v, %v", again, err)
	}
}

func TestToolErrorsAndPanicsAreReportedToTheModel(t *testing.T) {
	b := looptest.New()
	clock := &countingTool{name: "clock", err: errors.New("clock is broken")}
	calc := &countingTool{name: "calculator", panics: true}
	eng := newEngine(t, b, loop.Config{Tools: []loop.Tool{clock, calc}})
	res, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "go"})
	if err != nil || res.Reason != events.ReasonDone {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if !strings.Contains(res.Answer, "error: clock is broken") || !strings.Contains(res.Answer, "panicked") {
		t.Fatalf("the model did not see the failures: %q", res.Answer)
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
	if len(failed) != 2 || failed[0].Panicked || !failed[1].Panicked {
		t.Fatalf("tool.failed events: %+v", failed)
	}
}

func TestModelFailureEndsWithRunFailed(t *testing.T) {
	b := looptest.New()
	model := scripted.New(&scripted.Script{Replies: []scripted.Reply{{Error: "rate limited"}}})
	eng := newEngine(t, b, loop.Config{Model: model})
	res, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "go"})
	if err == nil || !strings.Contains(err.Error(), "rate limited") || res.Reason != loop.ReasonFailed {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	got := stagesOf(allEvents(t, b))
	want := []events.Stage{events.StageIntake, events.StageRunStarted, events.StageStepStarted,
		events.StageContextAssembled, events.StageModelFailed, events.StageRunFailed}
	if !slices.Equal(got, want) {
		t.Fatalf("stages %v, want %v", got, want)
	}
}

func TestMaxSteps(t *testing.T) {
	b := looptest.New()
	loopy := &scripted.Script{Replies: []scripted.Reply{
		{ToolCalls: []scripted.ToolCall{{Name: "clock"}}},
		{ToolCalls: []scripted.ToolCall{{Name: "clock"}}},
		{ToolCalls: []scripted.ToolCall{{Name: "clock"}}},
	}}
	eng := newEngine(t, b, loop.Config{Model: scripted.New(loopy), MaxSteps: 2})
	res, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "go"})
	if err != nil || res.Reason != events.ReasonMaxSteps || res.Steps != 2 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
}

func TestInvalidRequestPublishesNothing(t *testing.T) {
	b := looptest.New()
	eng := newEngine(t, b, loop.Config{})
	for _, req := range []*events.RunRequest{
		{AgentID: "a.b", SessionID: "s", Prompt: "x"},
		{AgentID: "a", SessionID: "s*", Prompt: "x"},
		{AgentID: "a", SessionID: "s", Prompt: ""},
		{RunID: "r 1", AgentID: "a", SessionID: "s", Prompt: "x"},
	} {
		if _, err := eng.Run(ctxT(t), req); !errors.Is(err, loop.ErrInvalidRequest) {
			t.Errorf("Run(%+v) = %v, want ErrInvalidRequest", req, err)
		}
	}
	if evs := allEvents(t, b); len(evs) != 0 {
		t.Fatalf("invalid requests published %d events", len(evs))
	}
}
