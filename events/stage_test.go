package events_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/events"
)

// The views derived from the stage table agree with each other.
func TestStageTableViews(t *testing.T) {
	inter := events.InterceptableStages()
	for i, st := range inter {
		if got := st.InterceptIndex(); got != i {
			t.Errorf("%s.InterceptIndex() = %d, want %d (its place in InterceptableStages)", st, got, i)
		}
	}
	for _, st := range events.Stages() {
		if st.Interceptable() != (st.Accepts() != 0) || st.Interceptable() != slices.Contains(inter, st) {
			t.Errorf("%s: Interceptable %v, Accepts %q, in InterceptableStages %v", st, st.Interceptable(), st.Accepts(), slices.Contains(inter, st))
		}
		if !st.Interceptable() && st.InterceptIndex() != -1 {
			t.Errorf("observe-only %s has intercept index %d", st, st.InterceptIndex())
		}
		if st.Privileged() && !st.Interceptable() {
			t.Errorf("%s is privileged but observe-only", st)
		}
		if st.Interceptable() && !st.Accepts().Has(events.DecisionAllow) {
			t.Errorf("%s accepts %q: every interceptable stage accepts allow", st, st.Accepts())
		}
		if n := testing.AllocsPerRun(10, func() { _ = st.Type() }); n != 0 {
			t.Errorf("%s.Type() allocates %v times", st, n)
		}
	}
	unknown := events.Stage("tool.nope")
	if unknown.Valid() || unknown.Interceptable() || unknown.Privileged() || unknown.Accepts() != 0 || unknown.InterceptIndex() != -1 {
		t.Errorf("unknown stage reads as known")
	}
	if unknown.Type() != "hookbus.tool.nope" {
		t.Errorf("Type of an unknown stage = %q", unknown.Type())
	}
}

// Every stage is in one group, and the groups' views agree with the table.
func TestStageGroups(t *testing.T) {
	groups := []events.Group{events.GroupRun, events.GroupStep, events.GroupModel, events.GroupTool,
		events.GroupApproval, events.GroupCompaction, events.GroupSubagent, events.GroupHook}
	var all []events.Stage
	for _, g := range groups {
		of := events.StagesOf(g)
		if len(of) == 0 {
			t.Errorf("group %s has no stage", g)
		}
		for _, st := range of {
			if st.Group() != g {
				t.Errorf("%s is in StagesOf(%s) but its Group is %q", st, g, st.Group())
			}
		}
		all = append(all, of...)
	}
	if len(all) != len(events.Stages()) || len(events.StagesOf(groups...)) != len(all) {
		t.Errorf("the groups hold %d stages, StagesOf(all) %d, the table %d", len(all), len(events.StagesOf(groups...)), len(events.Stages()))
	}
	for _, st := range events.Stages() {
		if st.Failed() != strings.HasSuffix(string(st), ".failed") {
			t.Errorf("%s: Failed() = %v", st, st.Failed())
		}
		if st.Terminal() != slices.Contains(events.TerminalStages(), st) || st.Terminal() && st.Group() != events.GroupRun {
			t.Errorf("%s: Terminal() = %v, group %s", st, st.Terminal(), st.Group())
		}
	}
	if !slices.Equal(events.TerminalStages(), []events.Stage{events.StageRunCompleted, events.StageRunFailed}) {
		t.Errorf("TerminalStages() = %v", events.TerminalStages())
	}
	unknown := events.Stage("tool.nope")
	if unknown.Group() != "" || unknown.Failed() || unknown.Terminal() {
		t.Errorf("unknown stage reads as known")
	}
}

func TestDecisions(t *testing.T) {
	names := events.AllDecisions.Names()
	want := []string{"allow", "modify", "deny", "mock", "stop", "ask", "continue"}
	if !slices.Equal(names, want) {
		t.Fatalf("AllDecisions.Names() = %v, want %v", names, want)
	}
	var union events.Decisions
	for _, n := range names {
		d := events.DecisionNamed(n)
		if d == 0 || union&d != 0 {
			t.Errorf("DecisionNamed(%q) = %b: none or not distinct", n, d)
		}
		union |= d
		if got := d.Names(); len(got) != 1 || got[0] != n {
			t.Errorf("DecisionNamed(%q).Names() = %v", n, got)
		}
	}
	if union != events.AllDecisions {
		t.Errorf("union of the decisions = %b, want AllDecisions %b", union, events.AllDecisions)
	}
	if events.DecisionNamed("Allow") != 0 || events.DecisionNamed("") != 0 {
		t.Error("DecisionNamed accepts a name that is not a decision")
	}
	set := events.DecisionAllow | events.DecisionStop
	if set.String() != "allow, stop" || !set.Has(events.DecisionStop) || set.Has(events.DecisionDeny) || set.Has(0) {
		t.Errorf("set %q: Has/String wrong", set)
	}
}
