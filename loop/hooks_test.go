package loop_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/loop/tools"
)

var _ loop.Interception = (*interceptors.Chain)(nil)

// recordingModel remembers what the model was shown.
type recordingModel struct {
	loop.Model
	mu   sync.Mutex
	seen [][]events.Message
}

func (m *recordingModel) Generate(ctx context.Context, req *loop.ModelRequest) (*loop.ModelResponse, error) {
	m.mu.Lock()
	m.seen = append(m.seen, slices.Clone(req.Messages))
	m.mu.Unlock()
	return m.Model.Generate(ctx, req)
}

func register(t *testing.T, c *interceptors.Chain, reg interceptors.Registration, fn interceptors.Func) {
	t.Helper()
	if reg.Plugin == "" {
		reg.Plugin = "test"
	}
	if _, err := c.Register(reg, fn); err != nil {
		t.Fatalf("Register(%+v): %v", reg, err)
	}
}

func payloadsOf[T any](t *testing.T, evs []*events.Event, st events.Stage) []T {
	t.Helper()
	var out []T
	for _, e := range evs {
		if e.Stage == st {
			var p T
			if err := e.DecodeData(&p); err != nil {
				t.Fatal(err)
			}
			out = append(out, p)
		}
	}
	return out
}

func TestContextAssembledHookChangesWhatTheModelSees(t *testing.T) {
	b := looptest.New()
	chain := interceptors.NewChain()
	register(t, chain, interceptors.Registration{Plugin: "redactor", Stage: events.StageContextAssembled, Builtin: true},
		func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			var ca events.ContextAssembled
			if err := req.Event.DecodeData(&ca); err != nil {
				return nil, err
			}
			for i := range ca.Messages {
				ca.Messages[i].Content = strings.ReplaceAll(ca.Messages[i].Content, "secret-123", "[redacted]")
			}
			return interceptors.Replace(ca)
		})
	model := &recordingModel{Model: scripted.New(nil)}
	eng := newEngine(t, b, loop.Config{Hooks: chain, Model: model})
	res, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "my password is secret-123"})
	if err != nil || res.Reason != events.ReasonDone {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if got := model.seen[0][0].Content; got != "my password is [redacted]" {
		t.Fatalf("model saw %q", got)
	}
	evs := allEvents(t, b)
	decided := payloadsOf[events.HookDecided](t, evs, events.StageHookDecided)
	if len(decided) != 2 || decided[0].Decision != "modify" || decided[0].Plugin != "redactor" || len(decided[0].Patch) == 0 {
		t.Fatalf("hook.decided = %+v", decided)
	}
	if !strings.Contains(string(decided[0].Patch), "[redacted]") {
		t.Errorf("patch %s does not show the change", decided[0].Patch)
	}
	// The stream's context.assembled records what took effect; the hook's
	// decision comes right before it.
	for i, e := range evs {
		if e.Stage == events.StageContextAssembled {
			if evs[i-1].Stage != events.StageHookDecided || strings.Contains(string(e.Data), "secret-123") {
				t.Fatalf("context.assembled %d: prev %s, data %s", i, evs[i-1].Stage, e.Data)
			}
		}
	}
}

func TestToolBeforeDenyReachesTheModelAndSkipsTheTool(t *testing.T) {
	b := looptest.New()
	chain := interceptors.NewChain()
	register(t, chain, interceptors.Registration{Plugin: "policy", Stage: events.StageToolBefore, Tools: "calc*"},
		func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Deny, Reason: "no maths on Sundays"}, nil
		})
	calc := &countingTool{name: "calculator", answer: "42"}
	clock := &countingTool{name: "clock", answer: "noon"}
	eng := newEngine(t, b, loop.Config{Hooks: chain, Tools: []loop.Tool{clock, calc}})
	res, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "go"})
	if err != nil || res.Reason != events.ReasonDone {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if calc.calls.Load() != 0 || clock.calls.Load() != 1 {
		t.Fatalf("calculator ran %d times, clock %d", calc.calls.Load(), clock.calls.Load())
	}
	if !strings.Contains(res.Answer, "denied: policy: no maths on Sundays") {
		t.Fatalf("the model did not get the deny reason: %q", res.Answer)
	}
	// The matcher skipped the clock: one decision only.
	if n := len(payloadsOf[events.HookDecided](t, allEvents(t, b), events.StageHookDecided)); n != 1 {
		t.Fatalf("%d hook.decided events, want 1", n)
	}
}

func TestToolBeforeMockSkipsTheTool(t *testing.T) {
	b := looptest.New()
	chain := interceptors.NewChain()
	register(t, chain, interceptors.Registration{Plugin: "eval", Stage: events.StageToolBefore, Tools: "clock"},
		func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return interceptors.Mocked("1999-12-31T23:59:59Z", false), nil
		})
	clock := &countingTool{name: "clock", answer: "noon"}
	eng := newEngine(t, b, loop.Config{Hooks: chain, Tools: []loop.Tool{clock, tools.Calculator()}})
	res, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "go"})
	if err != nil || !strings.Contains(res.Answer, "It is 1999-12-31T23:59:59Z") {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if clock.calls.Load() != 0 {
		t.Fatal("a mocked tool ran")
	}
	afters := payloadsOf[events.ToolAfter](t, allEvents(t, b), events.StageToolAfter)
	if !afters[0].Result.Mocked || afters[1].Result.Mocked {
		t.Fatalf("tool.after mocked flags: %+v", afters)
	}
}

func TestIntakeDenyRejectsTheRun(t *testing.T) {
	b := looptest.New()
	chain := interceptors.NewChain()
	register(t, chain, interceptors.Registration{Plugin: "gate", Stage: events.StageIntake},
		func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Deny, Reason: "quota exceeded"}, nil
		})
	eng := newEngine(t, b, loop.Config{Hooks: chain})
	res, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "go"})
	if err != nil || res.Reason != events.ReasonRejected || !strings.Contains(res.Detail, "quota exceeded") {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	want := []events.Stage{events.StageHookDecided, events.StageIntake, events.StageRunCompleted}
	if got := stagesOf(allEvents(t, b)); !slices.Equal(got, want) {
		t.Fatalf("stages %v, want %v", got, want)
	}
}

func TestIntakeModifyAndModelRespondedModify(t *testing.T) {
	b := looptest.New()
	chain := interceptors.NewChain()
	register(t, chain, interceptors.Registration{Plugin: "rewriter", Stage: events.StageIntake},
		func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Modify,
				Patch: []interceptors.PatchOp{{Op: "replace", Path: "/prompt", Value: json.RawMessage(`"rewritten"`)}}}, nil
		})
	// A privileged built-in drops every tool call but the first.
	register(t, chain, interceptors.Registration{Plugin: "guard", Stage: events.StageModelResponded, Builtin: true},
		func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			var mr events.ModelResponded
			if err := req.Event.DecodeData(&mr); err != nil {
				return nil, err
			}
			if len(mr.Message.ToolCalls) < 2 {
				return nil, nil
			}
			mr.Message.ToolCalls = mr.Message.ToolCalls[:1]
			return interceptors.Replace(mr)
		})
	clock := &countingTool{name: "clock", answer: "noon"}
	calc := &countingTool{name: "calculator", answer: "42"}
	eng := newEngine(t, b, loop.Config{Hooks: chain, Tools: []loop.Tool{clock, calc}})
	res, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "original"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(res.Answer, "(You asked: rewritten)") || calc.calls.Load() != 0 || clock.calls.Load() != 1 {
		t.Fatalf("answer %q, calculator %d, clock %d", res.Answer, calc.calls.Load(), clock.calls.Load())
	}
	started := payloadsOf[events.RunStarted](t, allEvents(t, b), events.StageRunStarted)
	if started[0].Prompt != "rewritten" {
		t.Fatalf("run.started prompt %q", started[0].Prompt)
	}
}

func TestUntrustedPluginCannotRegisterOnPrivilegedStage(t *testing.T) {
	chain := interceptors.NewChain()
	_, err := chain.Register(interceptors.Registration{Plugin: "thirdparty", Stage: events.StageModelResponded},
		interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) { return nil, nil }))
	if err == nil || !strings.Contains(err.Error(), "thirdparty") || !strings.Contains(err.Error(), "model.responded") {
		t.Fatalf("Register = %v", err)
	}
}

func TestStopHookContinueIsCapped(t *testing.T) {
	b := looptest.New()
	chain := interceptors.NewChain()
	register(t, chain, interceptors.Registration{Plugin: "nag", Stage: events.StageStop},
		func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Continue, Context: "check your work"}, nil
		})
	replies := make([]scripted.Reply, 6)
	for i := range replies {
		replies[i] = scripted.Reply{Content: "done, I think"}
	}
	eng := newEngine(t, b, loop.Config{Hooks: chain, MaxContinues: 2, Model: scripted.New(&scripted.Script{Replies: replies})})
	res, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "go"})
	if err != nil || res.Reason != events.ReasonDone || res.Steps != 3 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	stops := payloadsOf[events.Stop](t, allEvents(t, b), events.StageStop)
	if len(stops) != 3 || stops[0].Continue != "check your work" || stops[0].Plugin != "nag" || stops[2].Continue != "" {
		t.Fatalf("stop events %+v", stops)
	}
	// The forced message is part of the session.
	sess, err := b.SessionEvents(ctxT(t), "demo", "s1")
	if err != nil {
		t.Fatal(err)
	}
	rebuilt, err := loop.RebuildSession(sess)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range rebuilt.Messages {
		if m.Role == events.RoleUser && m.Content == "check your work" {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d continue messages in the session, want 2", n)
	}
}

func TestToolAfterModifyAndContext(t *testing.T) {
	b := looptest.New()
	chain := interceptors.NewChain()
	register(t, chain, interceptors.Registration{Plugin: "pii", Stage: events.StageToolAfter, Tools: "calculator"},
		func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Modify, Context: "verified by pii",
				Patch: []interceptors.PatchOp{{Op: "replace", Path: "/result/content", Value: json.RawMessage(`"forty-two"`)}}}, nil
		})
	eng := newEngine(t, b, loop.Config{Hooks: chain})
	res, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "go"})
	if err != nil || !strings.Contains(res.Answer, "6*7 = forty-two\n\nverified by pii") {
		t.Fatalf("Run = %+v, %v", res, err)
	}
}

func TestHookTimeoutAndFailurePolicies(t *testing.T) {
	b := looptest.New()
	chain := interceptors.NewChain()
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	register(t, chain, interceptors.Registration{Plugin: "sleepy", Stage: events.StageToolBefore, Tools: "clock", Timeout: 50 * time.Millisecond},
		func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			<-block // ignores ctx
			return nil, nil
		})
	register(t, chain, interceptors.Registration{Plugin: "strict", Stage: events.StageToolBefore, Tools: "calculator", Policy: interceptors.PolicyFail},
		func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			panic("strict hook crashed")
		})
	clock := &countingTool{name: "clock", answer: "noon"}
	calc := &countingTool{name: "calculator", answer: "42"}
	eng := newEngine(t, b, loop.Config{Hooks: chain, Tools: []loop.Tool{clock, calc}})
	res, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "go"})
	if err != nil || res.Reason != events.ReasonDone {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if clock.calls.Load() != 1 || calc.calls.Load() != 0 {
		t.Fatalf("fail-open should run the clock, fail-closed should deny the calculator: clock %d calc %d", clock.calls.Load(), calc.calls.Load())
	}
	failed := payloadsOf[events.HookFailed](t, allEvents(t, b), events.StageHookFailed)
	if len(failed) != 2 {
		t.Fatalf("hook.failed = %+v", failed)
	}
	if failed[0].Plugin != "sleepy" || failed[0].Kind != events.FailTimeout || failed[0].Outcome != "failed_open" {
		t.Errorf("timeout record %+v", failed[0])
	}
	if failed[1].Plugin != "strict" || failed[1].Kind != events.FailPanic || failed[1].Outcome != "failed_closed" {
		t.Errorf("panic record %+v", failed[1])
	}
}

func TestPerRunHooksEndWithTheRun(t *testing.T) {
	b := looptest.New()
	chain := interceptors.NewChain()
	eng := newEngine(t, b, loop.Config{Hooks: chain})
	child := chain.Child()
	calls := 0
	register(t, child, interceptors.Registration{Plugin: "once", Stage: events.StageStepStarted},
		func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			calls++
			return nil, nil
		})
	if _, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "go"}, loop.WithHooks(child)); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "again"}); err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Fatalf("per-run hook called %d times, want 2 (the two steps of its own run)", calls)
	}
}

func TestNoHooksNoAuditEvents(t *testing.T) {
	b := looptest.New()
	eng := newEngine(t, b, loop.Config{Hooks: interceptors.NewChain()})
	if _, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "go"}); err != nil {
		t.Fatal(err)
	}
	for _, e := range allEvents(t, b) {
		if e.Stage == events.StageHookDecided || e.Stage == events.StageHookFailed {
			t.Fatalf("an empty chain produced %s", e.Stage)
		}
	}
}
