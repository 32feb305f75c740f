package audit_test

import (
	"testing"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/audit/audittest"
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
}
