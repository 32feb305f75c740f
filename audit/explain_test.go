package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/audit/audittest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/policy"
)

// Explain lists each call of a recorded run with the interceptors that
// decided on it, in order, and the chain's outcome: a mock, a rewrite
// followed by a tool.after's allow, and a call nothing matched.
func TestExplainListsEachCallsDecisions(t *testing.T) {
	evs := audittest.Stream(t, "hooks-modify-mock", "hooks-deny")
	x := audit.NewExplain("01KDYBK349A800000000000001")
	for _, e := range evs {
		x.Add(e)
	}
	type row struct{ stage, call, hooks, outcome, by string }
	var got []row
	for _, c := range x.Calls() {
		if c.CallID == "" {
			continue
		}
		hs := ""
		for _, h := range c.Hooks {
			hs += h.Plugin + ":" + h.Decision + " "
		}
		got = append(got, row{string(c.Stage), c.CallID, hs, c.Outcome, c.By})
	}
	want := []row{
		{"tool.before", "call_1_1", "eval:mock ", "mock", "eval"},
		{"tool.before", "call_1_2", "rewriter:modify ", "modify", "rewriter"},
		{"tool.after", "call_1_2", "auditor:allow ", "allow", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("calls %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("call %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if cs := x.Call("call_1_2"); len(cs) != 2 {
		t.Fatalf("Call(call_1_2): %d events, want its tool.before and tool.after", len(cs))
	}

	deny := audit.NewExplain("01KDYCK349A800000000000001")
	for _, e := range evs {
		deny.Add(e)
	}
	cs := deny.Call("call_1_2")
	if len(cs) != 1 || cs[0].Outcome != "deny" || cs[0].By != "policy" || cs[0].Hooks[0].Reason != "no maths on Sundays" || !cs[0].Recorded {
		t.Fatalf("denied call: %+v", cs)
	}
	if cs := deny.Call("call_1_1"); len(cs) != 1 || len(cs[0].Hooks) != 0 || cs[0].Outcome != "allow" {
		t.Fatalf("a call nothing matched: %+v", cs)
	}

	// A hook that failed closed on the model's reply: its failure, and
	// the chain's deny.
	failed := audit.NewExplain("01KDYCK359A800000000000011")
	for _, e := range evs {
		failed.Add(e)
	}
	cs = failed.Call("01KDYCK35E8M00000000000016")
	if len(cs) != 1 || cs[0].Stage != "model.responded" || len(cs[0].Hooks) != 1 || cs[0].Outcome != "deny" || cs[0].By != "checker" {
		t.Fatalf("the reply a hook failed closed on: %+v", cs)
	}
	if f := cs[0].Hooks[0].Failure; f == nil || f.Kind != "error" || f.Outcome != audit.OutcomeFailedClosed || cs[0].Hooks[0].Shadow {
		t.Fatalf("the failure %+v", cs[0].Hooks[0])
	}
}

// recordChain records what a loop would for a tool call decided by chain:
// the chain's records (hook.decided, hook.failed), then the tool.before as
// the chain left it, then the shadow registrations' records (shadows
// receives them from the chain's sink: one per call here).
func recordChain(t *testing.T, chain *interceptors.Chain, shadows <-chan interceptors.CallRecord, run string, seq *uint64, call events.ToolCall) []*events.Event {
	t.Helper()
	m := events.Meta{Source: "hookbus/loop", AgentID: "demo", SessionID: "s1", RunID: run, Step: 1, Subject: call.Name}
	*seq++
	m.Seq, m.ID = *seq, events.NewID()
	ev, err := events.New(events.StageToolBefore, m, events.ToolBefore{Call: call.WithAction(events.HarnessHookbus)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := chain.Run(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Data) > 0 {
		ev.Data = res.Data
	}
	var out []*events.Event
	for _, r := range res.Records {
		out = append(out, audited(t, m, seq, r))
	}
	out = append(out, ev)
	if res.Shadow == nil {
		t.Fatal("no shadow registration matched")
	}
	res.Shadow(ev.ID)
	select {
	case r := <-shadows:
		out = append(out, audited(t, m, seq, r))
	case <-time.After(30 * time.Second):
		t.Fatal("the shadow call did not end")
	}
	return out
}

// audited is the hook.decided or hook.failed a loop records for r.
func audited(t *testing.T, m events.Meta, seq *uint64, r interceptors.CallRecord) *events.Event {
	t.Helper()
	{
		st, p := r.Audit()
		rm := m
		*seq++
		rm.Seq, rm.ID, rm.Subject = *seq, events.NewID(), r.Plugin
		e, err := events.New(st, rm, p)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
}

// A policy's decision is explained with its name, version, rule, mode,
// expression and the values it saw; an audit policy's as a shadow, not
// applied; an interceptor's beside them, in the chain's order.
func TestExplainShowsPolicyHits(t *testing.T) {
	ps, err := policy.Parse("p.yaml", []byte(`name: no-rm
order: 1
match: {kinds: [shell]}
validations:
- name: rm-rf
  expression: '!action.command.contains("rm -rf")'
  message: destructive shell command
---
name: no-push
mode: audit
match: {kinds: [shell]}
validations:
- name: push
  expression: '!action.command.startsWith("git push")'
  message: pushing needs a person
  action: ask
`))
	if err != nil {
		t.Fatal(err)
	}
	shadows := make(chan interceptors.CallRecord, 10)
	chain := interceptors.NewChain(interceptors.WithShadowSink(func(_ context.Context, _ *events.Event, rec interceptors.CallRecord) { shadows <- rec }))
	if _, err := chain.Register(interceptors.Registration{Plugin: "audit-log", Stage: events.StageToolBefore},
		interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) { return nil, nil })); err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		c, err := policy.Compile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, reg := range c.Registrations() {
			if _, err := chain.Register(reg, c.Interceptor()); err != nil {
				t.Fatal(err)
			}
		}
	}
	var seq uint64
	var evs []*events.Event
	for i, cmd := range []string{"ls", "rm -rf /tmp/x", "git push"} {
		evs = append(evs, recordChain(t, chain, shadows, "run-1", &seq, events.ToolCall{ID: fmt.Sprint("c", i+1), Name: "Bash", Arguments: json.RawMessage(`{"command":"` + cmd + `"}`)})...)
	}
	x := audit.NewExplain("run-1")
	for _, e := range evs {
		x.Add(e)
	}
	cs := x.Call("c2")
	if len(cs) != 1 {
		t.Fatalf("c2: %+v", cs)
	}
	var plugins []string
	for _, h := range cs[0].Hooks {
		plugins = append(plugins, h.Plugin)
	}
	if want := []string{"audit-log", "policy-no-rm", "policy-no-push"}; !slices.Equal(plugins, want) || !cs[0].Hooks[2].Shadow {
		t.Fatalf("c2 was decided by %v, want %v (in the chain's order; the audit policy, a shadow, after the chain)", plugins, want)
	}
	h := cs[0].Hooks[1]
	if p := h.Policy; p == nil || p.Name != "no-rm" || p.Version != ps[0].Version || p.Rule != "rm-rf" || p.Mode != "enforce" || !p.Enforced ||
		p.Action != "deny" || p.Expression != `!action.command.contains("rm -rf")` || p.Values["action.command"] == "" || p.Message != "destructive shell command" {
		t.Fatalf("the policy's decision %+v: %+v", h, h.Policy)
	}
	if cs[0].Outcome != "deny" || cs[0].By != "policy-no-rm" || h.Shadow || h.Remote {
		t.Fatalf("c2 %+v", cs[0])
	}
	cs = x.Call("c3")
	var shadow *audit.HookCall
	for _, h := range cs[0].Hooks {
		if h.Plugin == "policy-no-push" {
			shadow = h
		}
	}
	if shadow == nil || !shadow.Shadow || shadow.Decision != "ask" || shadow.Policy == nil || shadow.Policy.Enforced || shadow.Policy.Mode != "audit" || shadow.Policy.Rule != "push" {
		t.Fatalf("the audit policy's decision on c3: %+v", shadow)
	}
	if cs[0].Outcome != "allow" {
		t.Fatalf("a shadow decides nothing: c3 %+v", cs[0])
	}
}
