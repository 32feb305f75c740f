package interceptorstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

const tb = events.StageToolBefore

func testRegistrationOrder(h *harness) {
	c, tr := h.chain(), &trace{}
	for _, name := range []string{"c", "a", "b"} {
		h.register(c, interceptors.Registration{Plugin: name, Stage: events.StageIntake}, tr.hook(name, nil))
	}
	out := h.run(c, h.intake("hi"))
	h.wantDecision(out, interceptors.Allow)
	if got := tr.get(); !slices.Equal(got, []string{"c", "a", "b"}) {
		h.t.Fatalf("called %v, want registration order [c a b]", got)
	}
	h.wantPlugins(out, "c", "a", "b")
}

func testExplicitOrder(h *harness) {
	c, tr := h.chain(), &trace{}
	for _, r := range []struct {
		name  string
		order int
	}{{"late", 10}, {"first", -5}, {"mid1", 0}, {"mid2", 0}, {"early", -1}} {
		h.register(c, interceptors.Registration{Plugin: r.name, Stage: tb, Order: r.order}, tr.hook(r.name, nil))
	}
	h.run(c, h.toolBefore("bash", `{"cmd":"ls"}`))
	if got, want := tr.get(), []string{"first", "early", "mid1", "mid2", "late"}; !slices.Equal(got, want) {
		h.t.Fatalf("called %v, want %v (order, then registration)", got, want)
	}
	regs := c.Registrations(tb)
	if len(regs) != 5 || regs[0].Plugin != h.plugin("first") || regs[4].Plugin != h.plugin("late") {
		h.t.Fatalf("Registrations: %+v", regs)
	}
}

// testSequential: each interceptor starts only after the previous one
// returned.
func testSequential(h *harness) {
	c, tr := h.chain(), &trace{}
	hook := func(name string) interceptors.Func {
		return func(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			tr.hook(name+">", nil)(ctx, req)
			runtime.Gosched() // give a concurrent call the chance to interleave
			tr.hook("<"+name, nil)(ctx, req)
			return nil, nil
		}
	}
	for _, name := range []string{"a", "b", "c", "d"} {
		h.register(c, interceptors.Registration{Plugin: name, Stage: events.StageIntake}, hook(name))
	}
	h.run(c, h.intake("hi"))
	if got, want := tr.get(), []string{"a>", "<a", "b>", "<b", "c>", "<c", "d>", "<d"}; !slices.Equal(got, want) {
		h.t.Fatalf("calls %v, want %v (one after another)", got, want)
	}
}

func testPipelineData(h *harness) {
	c := h.chain()
	suffix := func(s string) interceptors.Func {
		return func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			in, err := events.Data[events.Intake](req.Event)
			if err != nil {
				return nil, err
			}
			in.Prompt += s
			return interceptors.Replace(in)
		}
	}
	h.register(c, interceptors.Registration{Plugin: "a", Stage: events.StageIntake}, suffix(" +a"))
	h.register(c, interceptors.Registration{Plugin: "b", Stage: events.StageIntake}, suffix(" +b"))
	var seen string
	h.register(c, interceptors.Registration{Plugin: "last", Stage: events.StageIntake}, func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
		seen = payloadOf[events.Intake](h.t, req.Event.Data).Prompt
		return nil, nil
	})
	out := h.run(c, h.intake("hi"))
	h.wantDecision(out, interceptors.Modify)
	if got := payloadOf[events.Intake](h.t, out.Data).Prompt; got != "hi +a +b" || seen != "hi +a +b" {
		h.t.Fatalf("final prompt %q, last hook saw %q; want both %q", got, seen, "hi +a +b")
	}
	// The audit shows who changed what.
	want := []interceptors.PatchOp{{Op: "replace", Path: "/prompt", Value: json.RawMessage(`"hi +a"`)}}
	if p := out.Records[0].Patch; len(p) != 1 || p[0].Op != want[0].Op || p[0].Path != want[0].Path || string(p[0].Value) != string(want[0].Value) {
		h.t.Fatalf("record a patch %+v, want %+v", p, want)
	}
	if d := out.Records[1].HookDecided(); d.Decision != "modify" || !strings.Contains(string(d.Patch), `"hi +a +b"`) {
		h.t.Fatalf("record b hook.decided %+v", d)
	}
}

func testPipelinePatch(h *harness) {
	c := h.chain()
	h.register(c, interceptors.Registration{Plugin: "rewrite", Stage: tb}, func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		return &interceptors.Decision{Kind: interceptors.Modify, Patch: []interceptors.PatchOp{
			{Op: "replace", Path: "/call/arguments/cmd", Value: json.RawMessage(`"ls -la"`)},
		}}, nil
	})
	h.register(c, interceptors.Registration{Plugin: "add", Stage: tb}, func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
		p, err := events.Data[events.ToolBefore](req.Event)
		if err != nil {
			return nil, err
		}
		if !strings.Contains(string(p.Call.Arguments), "ls -la") {
			return nil, errors.New("did not see the previous patch: " + string(p.Call.Arguments))
		}
		return &interceptors.Decision{Kind: interceptors.Modify, Patch: []interceptors.PatchOp{
			{Op: "add", Path: "/call/arguments/cwd", Value: json.RawMessage(`"/tmp"`)},
		}}, nil
	})
	out := h.run(c, h.toolBefore("bash", `{"cmd":"ls"}`))
	h.wantDecision(out, interceptors.Modify)
	args := payloadOf[events.ToolBefore](h.t, out.Data).Call.Arguments
	var got map[string]string
	if err := json.Unmarshal(args, &got); err != nil || got["cmd"] != "ls -la" || got["cwd"] != "/tmp" {
		h.t.Fatalf("arguments %s (%v), want cmd \"ls -la\" and cwd \"/tmp\"", args, err)
	}
	for _, r := range out.Records {
		if r.Failure != nil || len(r.Patch) != 1 {
			h.t.Fatalf("record %+v, want a modify with its patch", r)
		}
	}
}

func testInputNotMutated(h *harness) {
	c := h.chain()
	h.register(c, interceptors.Registration{Plugin: "m", Stage: events.StageIntake}, func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		return interceptors.Replace(events.Intake{Prompt: "changed"})
	})
	ev := h.intake("original")
	before := ev.Clone()
	out := h.run(c, ev)
	if string(ev.Data) != string(before.Data) || ev.ID != before.ID {
		h.t.Fatalf("input event changed: %s", ev.Data)
	}
	if payloadOf[events.Intake](h.t, out.Data).Prompt != "changed" {
		h.t.Fatalf("outcome data %s", out.Data)
	}
}

func testPrivilegedRejected(h *harness) {
	for _, stage := range []events.Stage{events.StageContextAssembled, events.StageModelResponded} {
		c := h.chain(interceptors.WithTrust(interceptors.NewGrants(h.plugin("someone-else"))))
		err := h.tryRegister(c, interceptors.Registration{Plugin: "untrusted", Stage: stage}, allow0)
		if !errors.Is(err, interceptors.ErrPrivileged) {
			h.t.Fatalf("%s: untrusted plugin registered (err %v), want ErrPrivileged", stage, err)
		}
		want := "plugin " + h.plugin("untrusted") + " lacks privileged_hooks permission for stage " + string(stage)
		if !strings.Contains(err.Error(), want) {
			h.t.Fatalf("error %q does not say %q", err, want)
		}
		if c.Has(stage, "", "agent-1") {
			h.t.Fatalf("%s: rejected registration is in the chain", stage)
		}
	}
}

func allow0(context.Context, *interceptors.Request) (*interceptors.Decision, error) { return nil, nil }

// rewritePrompt rewrites the prompt at context.assembled.
func rewritePrompt(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
	return &interceptors.Decision{Kind: interceptors.Modify, Patch: []interceptors.PatchOp{
		{Op: "replace", Path: "/messages/0/content", Value: json.RawMessage(`"You are terse."`)},
	}}, nil
}

func (h *harness) assembled() *events.Event {
	return h.event(events.StageContextAssembled, "", events.ContextAssembled{Messages: []events.Message{
		{Role: events.RoleSystem, Content: "You are helpful."}, {Role: events.RoleUser, Content: "hi"},
	}})
}

func (h *harness) wantRewritten(out *interceptors.ChainResult) {
	h.t.Helper()
	h.wantDecision(out, interceptors.Modify)
	if got := payloadOf[events.ContextAssembled](h.t, out.Data).Messages[0].Content; got != "You are terse." {
		h.t.Fatalf("system prompt %q, want it rewritten", got)
	}
}

func testPrivilegedBuiltin(h *harness) {
	c := h.chain()
	h.register(c, interceptors.Registration{Plugin: "builtin", Stage: events.StageContextAssembled, Builtin: true}, rewritePrompt)
	h.wantRewritten(h.run(c, h.assembled()))
}

func testPrivilegedGranted(h *harness) {
	c := h.chain(interceptors.WithTrust(interceptors.NewGrants(h.plugin("granted"))))
	h.register(c, interceptors.Registration{Plugin: "granted", Stage: events.StageContextAssembled}, rewritePrompt)
	h.register(c, interceptors.Registration{Plugin: "granted", Stage: events.StageModelResponded}, allow0)
	h.wantRewritten(h.run(c, h.assembled()))
}

func testTimeout(h *harness) {
	c := h.chain()
	var after calls
	h.register(c, interceptors.Registration{Plugin: "slow", Stage: tb, Timeout: 100 * time.Millisecond}, blockUntilCleanup(h.t))
	h.register(c, interceptors.Registration{Plugin: "after", Stage: tb}, after.allow)
	start := time.Now()
	out := h.run(c, h.toolBefore("bash", `{}`))
	within(h.t, time.Since(start), 5*time.Second, "a chain with a hung interceptor")
	h.wantDecision(out, interceptors.Allow)
	h.wantPlugins(out, "slow", "after")
	h.wantFailure(out.Records[0], events.FailTimeout, interceptors.ErrTimeout, interceptors.FailedOpen)
	if after.n.Load() != 1 {
		h.t.Fatalf("the interceptor after the hung one ran %d times, want 1", after.n.Load())
	}
	if out.Records[0].Latency < 100*time.Millisecond {
		h.t.Fatalf("timed out after %s, before its 100ms timeout", out.Records[0].Latency)
	}
}

func testDeadline(h *harness) {
	c := h.chain()
	const timeout = 2 * time.Second
	var got time.Time
	var ctxOK bool
	h.register(c, interceptors.Registration{Plugin: "d", Stage: tb, Timeout: timeout}, func(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
		dl, ok := ctx.Deadline()
		got, ctxOK = req.Deadline, ok && !dl.After(req.Deadline.Add(time.Millisecond))
		if req.Stage != tb || req.Event == nil || req.Event.Stage != tb {
			return nil, errors.New("request does not carry the stage and event")
		}
		return nil, nil
	})
	start := time.Now()
	out := h.run(c, h.toolBefore("bash", `{}`))
	if out.Records[0].Failure != nil {
		h.t.Fatalf("failed: %v", out.Records[0].Failure.Err)
	}
	if got.IsZero() || got.After(start.Add(timeout+time.Second)) || got.Before(start) || !ctxOK {
		h.t.Fatalf("request deadline %v (ctx deadline consistent: %v); want within %s of %v", got, ctxOK, timeout, start)
	}
}

func testErrorIsolated(h *harness) {
	c := h.chain()
	var after calls
	h.register(c, interceptors.Registration{Plugin: "broken", Stage: tb}, func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		return nil, errors.New("boom: database down")
	})
	h.register(c, interceptors.Registration{Plugin: "after", Stage: tb}, after.allow)
	out := h.run(c, h.toolBefore("bash", `{}`))
	h.wantDecision(out, interceptors.Allow)
	h.wantFailure(out.Records[0], events.FailError, interceptors.ErrHookError, interceptors.FailedOpen)
	if msg := out.Records[0].HookFailed().Error; !strings.Contains(msg, "boom: database down") {
		h.t.Fatalf("hook.failed error %q does not carry the interceptor's message", msg)
	}
	if after.n.Load() != 1 {
		h.t.Fatal("the chain did not go on after the error")
	}
}

func testPanicIsolated(h *harness) {
	c := h.chain()
	var after calls
	h.register(c, interceptors.Registration{Plugin: "panics", Stage: tb}, func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		panic("kaboom")
	})
	h.register(c, interceptors.Registration{Plugin: "after", Stage: tb}, after.allow)
	out := h.run(c, h.toolBefore("bash", `{}`))
	h.wantDecision(out, interceptors.Allow)
	sentinel := interceptors.ErrPanic
	if h.features.PanicKind == events.FailError {
		sentinel = interceptors.ErrHookError
	}
	h.wantFailure(out.Records[0], h.features.PanicKind, sentinel, interceptors.FailedOpen)
	if !strings.Contains(out.Records[0].Failure.Err.Error(), "kaboom") {
		h.t.Fatalf("failure %v does not carry the panic value", out.Records[0].Failure.Err)
	}
	if after.n.Load() != 1 {
		h.t.Fatal("the chain did not go on after the panic")
	}
}

func testDenyEnds(h *harness) {
	c := h.chain()
	var after calls
	h.register(c, interceptors.Registration{Plugin: "ok", Stage: tb}, allow0)
	h.register(c, interceptors.Registration{Plugin: "guard", Stage: tb}, func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		return &interceptors.Decision{Kind: interceptors.Deny, Reason: "rm -rf is not allowed"}, nil
	})
	h.register(c, interceptors.Registration{Plugin: "after", Stage: tb}, after.allow)
	out := h.run(c, h.toolBefore("bash", `{"cmd":"rm -rf /"}`))
	h.wantDecision(out, interceptors.Deny)
	if out.Reason != "rm -rf is not allowed" || out.Plugin != h.plugin("guard") {
		h.t.Fatalf("reason %q by %q", out.Reason, out.Plugin)
	}
	if after.n.Load() != 0 {
		h.t.Fatal("an interceptor ran after the deny")
	}
	h.wantPlugins(out, "ok", "guard")
	if d := out.Records[1].HookDecided(); d.Decision != "deny" || d.Reason != "rm -rf is not allowed" {
		h.t.Fatalf("hook.decided %+v", d)
	}
}

func testMock(h *harness) {
	c := h.chain()
	var after calls
	h.register(c, interceptors.Registration{Plugin: "eval", Stage: tb, Tools: "weather"}, func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		return interceptors.Mocked(`{"temp_c":21}`, false), nil
	})
	h.register(c, interceptors.Registration{Plugin: "after", Stage: tb}, after.allow)
	out := h.run(c, h.toolBefore("weather", `{"city":"Paris"}`))
	h.wantDecision(out, interceptors.Mock)
	m := out.Mock
	if m == nil || m.Content != `{"temp_c":21}` || m.IsError || !m.Mocked || m.CallID != "call-1" || m.Name != "weather" {
		h.t.Fatalf("mock result %+v", m)
	}
	if after.n.Load() != 0 {
		h.t.Fatal("an interceptor ran after the mock")
	}
}

func testAskStopContinue(h *harness) {
	c := h.chain()
	h.register(c, interceptors.Registration{Plugin: "approve", Stage: tb}, func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		return &interceptors.Decision{Kind: interceptors.Ask, Reason: "deploys need a human"}, nil
	})
	out := h.run(c, h.toolBefore("deploy", `{}`))
	h.wantDecision(out, interceptors.Ask)
	if out.Reason != "deploys need a human" {
		h.t.Fatalf("ask reason %q", out.Reason)
	}

	h.register(c, interceptors.Registration{Plugin: "budget", Stage: events.StageStepStarted}, func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		return &interceptors.Decision{Kind: interceptors.Stop}, nil
	})
	out = h.run(c, h.event(events.StageStepStarted, "", events.StepStarted{Step: 3}))
	h.wantDecision(out, interceptors.Stop)
	if out.Reason != "stopped by "+h.plugin("budget") {
		h.t.Fatalf("stop without reason: reason %q, want one naming the plugin", out.Reason)
	}

	h.register(c, interceptors.Registration{Plugin: "verify", Stage: events.StageStop}, func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		return &interceptors.Decision{Kind: interceptors.Continue, Context: "run the tests before finishing"}, nil
	})
	out = h.run(c, h.event(events.StageStop, "", events.Stop{Reason: "done", Answer: "fixed"}))
	h.wantDecision(out, interceptors.Continue)
	if !slices.Equal(out.Context, []string{"run the tests before finishing"}) {
		h.t.Fatalf("continue context %q", out.Context)
	}
}

func testToolAfterContext(h *harness) {
	c := h.chain()
	h.register(c, interceptors.Registration{Plugin: "note", Stage: events.StageToolAfter}, func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		return &interceptors.Decision{Kind: interceptors.Allow, Context: "the file is generated"}, nil
	})
	h.register(c, interceptors.Registration{Plugin: "redact", Stage: events.StageToolAfter}, func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		return &interceptors.Decision{Kind: interceptors.Modify, Context: "one secret redacted", Patch: []interceptors.PatchOp{
			{Op: "replace", Path: "/result/content", Value: json.RawMessage(`"token=[REDACTED]"`)},
		}}, nil
	})
	out := h.run(c, h.event(events.StageToolAfter, "read", events.ToolAfter{
		Call: events.ToolCall{ID: "c1", Name: "read"}, Result: events.ToolResult{CallID: "c1", Name: "read", Content: "token=s3cr3t"},
	}))
	h.wantDecision(out, interceptors.Modify)
	if !slices.Equal(out.Context, []string{"the file is generated", "one secret redacted"}) {
		h.t.Fatalf("context %q", out.Context)
	}
	// Each plugin's context is in its own record (hook.decided).
	if len(out.Records) != 2 || out.Records[0].HookDecided().Context != "the file is generated" || out.Records[1].HookDecided().Context != "one secret redacted" {
		h.t.Fatalf("records %+v: want each plugin's context in its own", out.Records)
	}
	if got := payloadOf[events.ToolAfter](h.t, out.Data).Result.Content; got != "token=[REDACTED]" {
		h.t.Fatalf("result %q", got)
	}
}

func testFailClosed(h *harness) {
	c := h.chain()
	var after calls
	h.register(c, interceptors.Registration{Plugin: "policy", Stage: tb, Policy: interceptors.PolicyFail}, func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		return nil, errors.New("policy engine unreachable")
	})
	h.register(c, interceptors.Registration{Plugin: "after", Stage: tb}, after.allow)
	out := h.run(c, h.toolBefore("bash", `{}`))
	h.wantDecision(out, interceptors.Deny)
	h.wantFailure(out.Records[0], events.FailError, interceptors.ErrHookError, interceptors.FailedClosed)
	// The reason is a sentence for the model; the error text stays in the
	// failure record (hook.failed).
	if out.Plugin != h.plugin("policy") || out.Reason != "blocked: the policy check failed" {
		h.t.Fatalf("fail-closed reason %q by %q: want the plugin and a sentence for the model", out.Reason, out.Plugin)
	}
	if f := out.Records[0].Failure; f == nil || !strings.Contains(f.Err.Error(), "policy engine unreachable") {
		h.t.Fatalf("failure record %+v: want the error text", f)
	}
	if after.n.Load() != 0 {
		h.t.Fatal("an interceptor ran after a fail-closed failure")
	}
	if f := out.Records[0].HookFailed(); f.Policy != "fail" || f.Outcome != "failed_closed" {
		h.t.Fatalf("hook.failed %+v", f)
	}

	// A fail-closed timeout on a stage that accepts no deny stops the run.
	c2 := h.chain()
	h.register(c2, interceptors.Registration{Plugin: "redactor", Stage: events.StageToolAfter, Policy: interceptors.PolicyFail, Timeout: 50 * time.Millisecond}, blockUntilCleanup(h.t))
	out = h.run(c2, h.event(events.StageToolAfter, "read", events.ToolAfter{Call: events.ToolCall{ID: "c1", Name: "read"}}))
	h.wantDecision(out, interceptors.Stop)
	h.wantFailure(out.Records[0], events.FailTimeout, interceptors.ErrTimeout, interceptors.FailedClosed)
}

func testFailOpen(h *harness) {
	c := h.chain()
	var after calls
	h.register(c, interceptors.Registration{Plugin: "flaky", Stage: tb, Policy: interceptors.PolicyIgnore}, func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		return nil, errors.New("flaked")
	})
	h.register(c, interceptors.Registration{Plugin: "after", Stage: tb}, after.allow)
	out := h.run(c, h.toolBefore("bash", `{}`))
	h.wantDecision(out, interceptors.Allow)
	h.wantFailure(out.Records[0], events.FailError, interceptors.ErrHookError, interceptors.FailedOpen)
	if after.n.Load() != 1 {
		h.t.Fatal("the chain did not go on after a fail-open failure")
	}
}

func testValidatingAfterMutating(h *harness) {
	c, tr := h.chain(), &trace{}
	sawModified := func(name string, d *interceptors.Decision) interceptors.Func {
		return func(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			if !strings.Contains(string(req.Event.Data), "ls -la") {
				return nil, errors.New("validator saw the payload before mutation: " + string(req.Event.Data))
			}
			return tr.hook(name, d)(ctx, req)
		}
	}
	// Validators registered first, and with a lower order, still run after
	// the mutating interceptors.
	h.register(c, interceptors.Registration{Plugin: "v-allow", Stage: tb, Mode: interceptors.ModeValidate, Order: -10}, sawModified("v-allow", nil))
	h.register(c, interceptors.Registration{Plugin: "v-deny", Stage: tb, Mode: interceptors.ModeValidate, Order: -10}, sawModified("v-deny",
		&interceptors.Decision{Kind: interceptors.Deny, Reason: "-la leaks hidden files"}))
	h.register(c, interceptors.Registration{Plugin: "mutate", Stage: tb}, func(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
		tr.hook("mutate", nil)(ctx, req)
		return &interceptors.Decision{Kind: interceptors.Modify, Patch: []interceptors.PatchOp{
			{Op: "replace", Path: "/call/arguments/cmd", Value: json.RawMessage(`"ls -la"`)},
		}}, nil
	})
	out := h.run(c, h.toolBefore("bash", `{"cmd":"ls"}`))
	h.wantDecision(out, interceptors.Deny)
	if out.Reason != "-la leaks hidden files" || out.Plugin != h.plugin("v-deny") {
		h.t.Fatalf("reason %q by %q", out.Reason, out.Plugin)
	}
	if got := tr.get(); len(got) != 3 || got[0] != "mutate" {
		h.t.Fatalf("called %v, want mutate first, then both validators", got)
	}
	h.wantPlugins(out, "mutate", "v-allow", "v-deny")
	for _, r := range out.Records {
		if r.Failure != nil {
			h.t.Fatalf("%s failed: %v", r.Plugin, r.Failure.Err)
		}
	}
}

// testValidatingParallel proves validators run at once without sleeping:
// each waits for the other to have started, which a sequential run would
// only satisfy by timing the first one out.
func testValidatingParallel(h *harness) {
	c := h.chain()
	aStarted, bStarted := make(chan struct{}), make(chan struct{})
	barrier := func(mine, other chan struct{}) interceptors.Func {
		return func(ctx context.Context, _ *interceptors.Request) (*interceptors.Decision, error) {
			close(mine)
			select {
			case <-other:
				return nil, nil
			case <-ctx.Done():
				return nil, errors.New("the other validator never started: validators ran one after another")
			}
		}
	}
	reg := func(name string) interceptors.Registration {
		return interceptors.Registration{Plugin: name, Stage: events.StageIntake, Mode: interceptors.ModeValidate, Timeout: 5 * time.Second}
	}
	h.register(c, reg("a"), barrier(aStarted, bStarted))
	h.register(c, reg("b"), barrier(bStarted, aStarted))
	out := h.run(c, h.intake("hi"))
	h.wantDecision(out, interceptors.Allow)
	for _, r := range out.Records {
		if r.Failure != nil {
			h.t.Fatalf("%s: %v", r.Plugin, r.Failure.Err)
		}
	}
}

func testValidatingDenyOverAsk(h *harness) {
	c := h.chain()
	h.register(c, interceptors.Registration{Plugin: "ask", Stage: tb}, func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		return &interceptors.Decision{Kind: interceptors.Ask, Reason: "confirm"}, nil
	})
	h.register(c, interceptors.Registration{Plugin: "policy", Stage: tb, Mode: interceptors.ModeValidate}, func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		return &interceptors.Decision{Kind: interceptors.Deny, Reason: "forbidden"}, nil
	})
	out := h.run(c, h.toolBefore("bash", `{}`))
	h.wantDecision(out, interceptors.Deny)
	if out.Reason != "forbidden" {
		h.t.Fatalf("reason %q", out.Reason)
	}
}

func testMatchers(h *harness) {
	c := h.chain()
	var fs, ops, any calls
	h.register(c, interceptors.Registration{Plugin: "fs", Stage: tb, Tools: "fs_*|edit"}, fs.allow)
	h.register(c, interceptors.Registration{Plugin: "ops", Stage: tb, Agents: "ops-*"}, ops.allow)
	h.register(c, interceptors.Registration{Plugin: "any", Stage: events.StageToolAfter}, any.allow)

	if !c.Has(tb, "fs_read", "agent-1") || !c.Has(tb, "edit", "agent-1") || !c.Has(tb, "bash", "ops-7") {
		h.t.Fatal("Has misses a matching registration")
	}
	if c.Has(tb, "bash", "agent-1") || c.Has(events.StageIntake, "", "agent-1") || c.Has(events.StageRunStarted, "", "agent-1") {
		h.t.Fatal("Has reports a registration that does not match")
	}
	for _, tool := range []string{"fs_read", "fs_write", "edit", "bash", "fs", "edit2"} {
		h.run(c, h.toolBefore(tool, `{}`))
	}
	if fs.n.Load() != 3 {
		h.t.Fatalf("fs_*|edit called %d times, want 3 (fs_read, fs_write, edit)", fs.n.Load())
	}
	if ops.n.Load() != 0 {
		h.t.Fatalf("agent matcher ops-* called %d times for agent-1", ops.n.Load())
	}
	out := h.run(c, h.toolBefore("bash", `{}`))
	if len(out.Records) != 0 {
		h.t.Fatalf("records for skipped registrations: %+v", out.Records)
	}
}

func testBadReplyDisallowed(h *harness) {
	c := h.chain()
	var after calls
	h.register(c, interceptors.Registration{Plugin: "confused", Stage: events.StageIntake}, func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		return interceptors.Mocked("x", false), nil // mock is tool.before only
	})
	h.register(c, interceptors.Registration{Plugin: "after", Stage: events.StageIntake}, after.allow)
	out := h.run(c, h.intake("hi"))
	h.wantDecision(out, interceptors.Allow)
	h.wantFailure(out.Records[0], events.FailBadReply, interceptors.ErrBadReply, interceptors.FailedOpen)
	if !strings.Contains(out.Records[0].Failure.Err.Error(), "mock") {
		h.t.Fatalf("bad reply error %q does not name the decision", out.Records[0].Failure.Err)
	}
	if after.n.Load() != 1 {
		h.t.Fatal("the chain did not go on after a bad reply")
	}
}

func testBadReplyValidatingModify(h *harness) {
	c := h.chain()
	h.register(c, interceptors.Registration{Plugin: "sneaky", Stage: events.StageIntake, Mode: interceptors.ModeValidate, Policy: interceptors.PolicyFail}, func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		return interceptors.Replace(events.Intake{Prompt: "rewritten"})
	})
	ev := h.intake("hi")
	out := h.run(c, ev)
	h.wantDecision(out, interceptors.Deny)
	h.wantFailure(out.Records[0], events.FailBadReply, interceptors.ErrBadReply, interceptors.FailedClosed)
	if string(out.Data) != string(ev.Data) {
		h.t.Fatalf("a validating interceptor changed the payload: %s", out.Data)
	}
}

func testBadReplyPatch(h *harness) {
	c := h.chain()
	h.register(c, interceptors.Registration{Plugin: "mistyped", Stage: tb}, func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		return &interceptors.Decision{Kind: interceptors.Modify, Patch: []interceptors.PatchOp{
			{Op: "replace", Path: "/call/name", Value: json.RawMessage(`42`)}, // a tool name is a string
		}}, nil
	})
	h.register(c, interceptors.Registration{Plugin: "missing", Stage: tb}, func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		return &interceptors.Decision{Kind: interceptors.Modify, Patch: []interceptors.PatchOp{
			{Op: "replace", Path: "/no/such/path", Value: json.RawMessage(`1`)},
		}}, nil
	})
	ev := h.toolBefore("bash", `{"cmd":"ls"}`)
	out := h.run(c, ev)
	h.wantDecision(out, interceptors.Allow)
	for _, r := range out.Records {
		h.wantFailure(r, events.FailBadReply, interceptors.ErrBadReply, interceptors.FailedOpen)
	}
	if string(out.Data) != string(ev.Data) {
		h.t.Fatalf("a bad patch changed the payload: %s", out.Data)
	}
}

func testWarningsAnnotations(h *harness) {
	c := h.chain()
	h.register(c, interceptors.Registration{Plugin: "lint", Stage: tb}, func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		return &interceptors.Decision{Kind: interceptors.Allow, Reason: "fine", Warnings: []string{"slow tool"}, Annotations: map[string]string{"risk": "low"}}, nil
	})
	out := h.run(c, h.toolBefore("bash", `{}`))
	st, p := out.Records[0].Audit()
	d, ok := p.(events.HookDecided)
	if st != events.StageHookDecided || !ok || d.Decision != "allow" || d.Reason != "fine" ||
		!slices.Equal(d.Warnings, []string{"slow tool"}) || d.Annotations["risk"] != "low" || d.Plugin != h.plugin("lint") ||
		d.Stage != tb || d.EventID == "" {
		h.t.Fatalf("audit %s %+v", st, p)
	}
}

// LargePayloadSize is the size of the tool result of the LargePayload case:
// more than NATS' default max_payload (1 MiB), so that a remote
// implementation sends it by claim check (docs/PROTOCOL.md, "Large
// payloads"): its server needs the payloads object store.
const LargePayloadSize = 2 << 20

// testLargePayload: an interceptor gets a tool result larger than a NATS
// message whole, and patches it.
func testLargePayload(h *harness) {
	c := h.chain()
	content := strings.Repeat("0123456789abcdef", LargePayloadSize/16)
	h.register(c, interceptors.Registration{Plugin: "redact", Stage: events.StageToolAfter, Timeout: 20 * time.Second},
		func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			p, err := events.Data[events.ToolAfter](req.Event)
			if err != nil {
				return nil, err
			}
			if p.Result.Content != content {
				return nil, fmt.Errorf("got a result of %d bytes, want the %d sent", len(p.Result.Content), len(content))
			}
			return &interceptors.Decision{Kind: interceptors.Modify, Context: "checked", Patch: []interceptors.PatchOp{
				{Op: "replace", Path: "/result/name", Value: json.RawMessage(`"dump (checked)"`)},
			}}, nil
		})
	out := h.run(c, h.event(events.StageToolAfter, "dump", events.ToolAfter{
		Call: events.ToolCall{ID: "c1", Name: "dump"}, Result: events.ToolResult{CallID: "c1", Name: "dump", Content: content},
	}))
	if f := out.Records[0].Failure; f != nil {
		h.t.Fatalf("failed: %v", f.Err)
	}
	h.wantDecision(out, interceptors.Modify)
	if p := payloadOf[events.ToolAfter](h.t, out.Data); p.Result.Name != "dump (checked)" || p.Result.Content != content {
		h.t.Fatalf("patched result: name %q, %d bytes of content", p.Result.Name, len(p.Result.Content))
	}
}
