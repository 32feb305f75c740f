package telemetry_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/events/tracectx"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/loop/tools"
	"github.com/hookbus/hookbus/telemetry"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// runTeam runs a planner that calls two tools (the guard, a remote
// interceptor, denies the clock) and then a helper agent, whose child run
// calls the calculator.
// A second interceptor, ghost, on the calculator's tool.after, has no
// service: its calls fail (no_responders) open.
func runTeam(t *testing.T, ctx context.Context, b *bus.Bus, em loop.Emitter, session string) *loop.Result {
	t.Helper()
	chain := interceptors.NewChain()
	if _, err := remote.Register(b, chain, interceptors.Registration{Plugin: "guard", Stage: events.StageToolBefore, Tools: "clock"}); err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Register(b, chain, interceptors.Registration{Plugin: "ghost", Stage: events.StageToolAfter, Tools: "calculator"}); err != nil {
		t.Fatal(err)
	}
	if em == nil {
		em = b
	}
	team := loop.NewTeam()
	calc := json.RawMessage(`{"expression":"6*7"}`)
	task, _ := json.Marshal(map[string]string{"description": "sums", "prompt": "what is 6*7", "subagent_type": "helper"})
	helper, err := loop.New(loop.Config{Emitter: em, History: b, Hooks: chain, Tools: tools.Builtin(""),
		Model: scripted.New(&scripted.Script{Name: "helper", Replies: []scripted.Reply{
			{ToolCalls: []scripted.ToolCall{{Name: "calculator", Arguments: calc}}},
			{Content: "{{tool:calculator}}"},
		}})})
	if err != nil {
		t.Fatal(err)
	}
	planner, err := loop.New(loop.Config{Emitter: em, History: b, Hooks: chain, Tools: tools.Builtin(""),
		Subagents: []loop.Subagent{{ID: "helper", Description: "does sums"}}, Team: team,
		Model: scripted.New(&scripted.Script{Name: "planner", Replies: []scripted.Reply{
			{ToolCalls: []scripted.ToolCall{{Name: "calculator", Arguments: calc}, {Name: "clock"}}},
			{ToolCalls: []scripted.ToolCall{{Name: loop.TaskTool, Arguments: task}}},
			{Content: "the helper says {{tool:Task}}"},
		}})})
	if err != nil {
		t.Fatal(err)
	}
	team.Add("helper", helper)
	res, err := planner.Run(ctx, &events.RunRequest{AgentID: "planner", SessionID: session, Prompt: "go"})
	if err != nil || res.Reason != events.ReasonDone {
		t.Fatalf("run: %+v, %v", res, err)
	}
	return res
}

// observe runs a durable otel observer over b until the test ends or stop
// is called; handle wraps Traces.Handle when set.
func observe(t *testing.T, ctx context.Context, b *bus.Bus, tr *telemetry.Traces, wrap func(bus.EventHandler) bus.EventHandler) *bus.Observer {
	t.Helper()
	h := bus.EventHandler(tr.Handle)
	if wrap != nil {
		h = wrap(h)
	}
	o, err := b.Observe(ctx, bus.ObserveConfig{Durable: "otel", Backoff: []time.Duration{20 * time.Millisecond}, MaxDeliver: -1}, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Stop)
	return o
}

func TestTracesOfARunAcrossARestart(t *testing.T) {
	ctx := ctxT(t)
	srv, nc := bustest.Start(t)
	b := bustest.Provision(t, nc)
	svc, err := remote.Serve(ctx, bustest.Conn(t, srv), remote.ServeConfig{Plugin: "guard", Stages: []events.Stage{events.StageToolBefore}},
		interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Deny, Reason: "no clocks today"}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	res := runTeam(t, ctx, b, nil, "s1")

	var evs []*events.Event
	if _, err := b.Replay(ctx, bus.Filter{}, func(e *events.Event) error { evs = append(evs, e); return nil }); err != nil {
		t.Fatal(err)
	}
	// The first observer stops after the planner's first tool.before: the
	// second must find that call's start in the stream.
	cut := -1
	for i, e := range evs {
		if e.Stage == events.StageToolBefore && e.RunID == res.RunID {
			cut = i + 1
			break
		}
	}
	rc := newReceiver(t)
	tr1, err := telemetry.NewTraces(telemetry.TracesConfig{Exporter: rc.exporter(t), Lookup: b})
	if err != nil {
		t.Fatal(err)
	}
	var handled atomic.Int32
	errStopping := errors.New("stopping")
	o1 := observe(t, ctx, b, tr1, func(h bus.EventHandler) bus.EventHandler {
		return func(ctx context.Context, e *events.Event) error {
			if int(handled.Load()) >= cut {
				return errStopping
			}
			if err := h(ctx, e); err != nil {
				return err
			}
			handled.Add(1)
			return nil
		}
	})
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return int(handled.Load()) >= cut && o1.Stats().Naked > 0 },
		"the first observer handled %d of %d events", handled.Load(), cut)
	o1.Stop()
	<-o1.Closed()
	before := len(rc.got())

	tr2, err := telemetry.NewTraces(telemetry.TracesConfig{Exporter: rc.exporter(t), Lookup: b})
	if err != nil {
		t.Fatal(err)
	}
	o2 := observe(t, ctx, b, tr2, nil)
	const want = 14 // planner: run, 3 chats, 3 tools, the guard's and the ghost's calls; helper: run, 2 chats, 1 tool, the ghost's call
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return len(rc.got()) >= want && o2.Stats().Acked >= uint64(len(evs)-cut) },
		"%d spans, %d events acked", len(rc.got()), o2.Stats().Acked)
	o2.Stop()
	<-o2.Closed()

	// A third start finds nothing left to send.
	tr3, err := telemetry.NewTraces(telemetry.TracesConfig{Exporter: rc.exporter(t), Lookup: b})
	if err != nil {
		t.Fatal(err)
	}
	o3 := observe(t, ctx, b, tr3, nil)
	info, err := b.JetStream().Consumer(ctx, b.Names().Events, "otel")
	if err != nil {
		t.Fatal(err)
	}
	if ci, err := info.Info(ctx); err != nil || ci.NumPending != 0 || ci.NumAckPending != 0 {
		t.Fatalf("consumer after the restart: %+v, %v", ci, err)
	}
	o3.Stop()

	spans := rc.got()
	checkSpans(t, spans, res, evs, before)
	if tr2.Open() != 0 {
		t.Errorf("%d runs still open", tr2.Open())
	}
}

func checkSpans(t *testing.T, spans []*tracepb.Span, res *loop.Result, evs []*events.Event, before int) {
	t.Helper()
	byID := map[string]*tracepb.Span{}
	for _, s := range spans {
		id := hexID(s.SpanId)
		if _, dup := byID[id]; dup {
			t.Errorf("span %s %q sent twice", id, s.Name)
		}
		byID[id] = s
	}
	if len(spans) != 14 {
		for _, s := range spans {
			t.Logf("span %s %q parent %s", hexID(s.SpanId), s.Name, hexID(s.ParentSpanId))
		}
		t.Fatalf("%d spans (%d before the restart), want 14", len(spans), before)
	}
	if before == 0 || before == len(spans) {
		t.Errorf("%d of %d spans before the restart: the cut is not mid-run", before, len(spans))
	}
	trace := tracectx.RunTrace(res.RunID)
	var child string
	var taskCall, clockCall, clockBefore, calcAfter string
	var clockStart time.Time
	for _, e := range evs {
		if e.RunID != res.RunID {
			child = e.RunID
		}
		if e.Stage == events.StageToolAfter && e.RunID == res.RunID && e.Subject == "calculator" {
			calcAfter = e.ID
		}
		if e.Stage == events.StageToolAfter && e.RunID == res.RunID && e.Subject == "calculator" {
			calcAfter = e.ID
		}
		if e.Stage == events.StageToolBefore && e.RunID == res.RunID {
			var p events.ToolBefore
			_ = e.DecodeData(&p)
			switch p.Call.Name {
			case loop.TaskTool:
				taskCall = p.Call.ID
			case "clock":
				clockCall, clockBefore, clockStart = p.Call.ID, e.ID, e.Time
			}
		}
	}
	get := func(id tracectx.SpanID, name string) *tracepb.Span {
		t.Helper()
		s := byID[id.String()]
		if s == nil {
			t.Fatalf("no span %q (%s)", name, id)
		}
		if s.Name != name {
			t.Errorf("span %s is %q, want %q", id, s.Name, name)
		}
		if hexID(s.TraceId) != trace.String() {
			t.Errorf("%q: trace %s, want %s", name, hexID(s.TraceId), trace)
		}
		if s.EndTimeUnixNano < s.StartTimeUnixNano || s.StartTimeUnixNano == 0 {
			t.Errorf("%q: from %d to %d", name, s.StartTimeUnixNano, s.EndTimeUnixNano)
		}
		return s
	}
	parentIs := func(s *tracepb.Span, p tracectx.SpanID) {
		t.Helper()
		if hexID(s.ParentSpanId) != p.String() {
			t.Errorf("%q: parent %s, want %s", s.Name, hexID(s.ParentSpanId), p)
		}
	}
	run := get(tracectx.RunSpan(res.RunID), "invoke_agent planner")
	if len(run.ParentSpanId) != 0 {
		t.Errorf("the planner's run has parent %s", hexID(run.ParentSpanId))
	}
	if str(run, "gen_ai.operation.name") != "invoke_agent" || str(run, "gen_ai.agent.id") != "planner" ||
		str(run, "gen_ai.conversation.id") != "s1" || str(run, "hookbus.run.reason") != "done" || num(run, "gen_ai.usage.output_tokens") <= 0 {
		t.Errorf("run attributes %v", run.Attributes)
	}
	for step := 1; step <= 3; step++ {
		c := get(tracectx.ChatSpan(res.RunID, step), "chat scripted:planner")
		parentIs(c, tracectx.RunSpan(res.RunID))
		if c.Kind != tracepb.Span_SPAN_KIND_CLIENT || str(c, "gen_ai.operation.name") != "chat" || str(c, "gen_ai.provider.name") != "scripted" ||
			str(c, "gen_ai.request.model") != "scripted:planner" || num(c, "gen_ai.usage.input_tokens") <= 0 ||
			attr(c, "gen_ai.response.finish_reasons").GetArrayValue() == nil {
			t.Errorf("chat %d: kind %v attributes %v", step, c.Kind, c.Attributes)
		}
	}
	calc := get(tracectx.ToolSpan(res.RunID, "call_1_1"), "execute_tool calculator")
	parentIs(calc, tracectx.RunSpan(res.RunID))
	if str(calc, "gen_ai.tool.name") != "calculator" || str(calc, "gen_ai.tool.call.id") != "call_1_1" || calc.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("calculator: %v %v", calc.Attributes, calc.Status)
	}
	clock := get(tracectx.ToolSpan(res.RunID, clockCall), "execute_tool clock")
	if clock.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || str(clock, "error.type") != "denied" {
		t.Errorf("clock: %v %v", clock.Attributes, clock.Status)
	}
	if clock.StartTimeUnixNano != uint64(clockStart.UnixNano()) {
		t.Errorf("clock span starts at %d, want its tool.before's %d (read back after the restart)", clock.StartTimeUnixNano, clockStart.UnixNano())
	}
	guard := get(tracectx.HookSpan(clockBefore, "guard"), "hook tool.before guard")
	parentIs(guard, tracectx.ToolSpan(res.RunID, clockCall))
	if guard.Kind != tracepb.Span_SPAN_KIND_CLIENT || str(guard, "hookbus.hook.plugin") != "guard" || str(guard, "hookbus.hook.decision") != "deny" ||
		str(guard, "hookbus.hook.reason") != "no clocks today" {
		t.Errorf("guard: kind %v attributes %v", guard.Kind, guard.Attributes)
	}
	ghost := get(tracectx.HookSpan(calcAfter, "ghost"), "hook tool.after ghost")
	parentIs(ghost, tracectx.ToolSpan(res.RunID, "call_1_1"))
	if ghost.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || str(ghost, "hookbus.hook.failure.kind") != "no_responders" ||
		str(ghost, "hookbus.hook.policy") != "ignore" || str(ghost, "hookbus.hook.decision") != "failed" {
		t.Errorf("ghost: %v %v", ghost.Attributes, ghost.Status)
	}
	taskSpan := get(tracectx.ToolSpan(res.RunID, taskCall), "execute_tool Task")
	parentIs(taskSpan, tracectx.RunSpan(res.RunID))
	helper := get(tracectx.RunSpan(child), "invoke_agent helper")
	parentIs(helper, tracectx.ToolSpan(res.RunID, taskCall))
	if str(helper, "hookbus.parent_run.id") != res.RunID {
		t.Errorf("helper: %v", helper.Attributes)
	}
	for step := 1; step <= 2; step++ {
		parentIs(get(tracectx.ChatSpan(child, step), "chat scripted:helper"), tracectx.RunSpan(child))
	}
	parentIs(get(tracectx.ToolSpan(child, "call_1_1"), "execute_tool calculator"), tracectx.RunSpan(child))
}
