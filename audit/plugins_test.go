package audit_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/hookbus/hookbus/audit"
)

// Runs.Decisions and Stats.Plugins count the same calls Stats.List does,
// per run and per plugin across stages; a replay narrowed to RunsStages
// summarises the runs as a full one does (but for the events counted).
func TestRunDecisionsAndPluginTotals(t *testing.T) {
	var rs, narrow audit.Runs
	var st audit.Stats
	var ss audit.Sessions
	evs := fold(t, &rs, &st, &ss)
	for _, e := range evs {
		if slices.Contains(audit.RunsStages, e.Stage) {
			narrow.Add(e)
		}
	}
	perKind := map[string]int{}
	for _, r := range rs.List() {
		for k, n := range rs.Decisions(r.RunID) {
			perKind[k] += n
		}
		n, _ := narrow.Get(r.RunID)
		n.Events, r.Events = 0, 0
		if !reflect.DeepEqual(n, r) {
			t.Fatalf("narrowed replay: %+v\nfull replay: %+v", n, r)
		}
	}
	if denied, _ := rs.Get("01KDYCK34TA80000000000000J"); rs.Decisions(denied.RunID)["deny"] == 0 {
		t.Fatalf("the denied run counts no deny: %v", rs.Decisions(denied.RunID))
	}
	if rs.Decisions("no-such-run") != nil {
		t.Fatal("decisions of a run not read")
	}

	fromList := map[string]int{}
	byPlugin := map[string]audit.PluginTotals{}
	for _, p := range st.Plugins() {
		byPlugin[p.Plugin] = p
	}
	calls := map[string]int{}
	for _, p := range st.List() {
		for k, n := range p.Decisions {
			fromList[k] += n
		}
		fromList[audit.DecisionFail] += p.Failed()
		calls[p.Plugin] += p.Calls
		tot := byPlugin[p.Plugin]
		if !slices.Contains(tot.Stages, p.Stage) || tot.MaxUS < p.MaxUS || tot.Runs == 0 || tot.Runs > rs.Len() {
			t.Fatalf("plugin %s: totals %+v, stage %s: %+v", p.Plugin, tot, p.Stage, p)
		}
	}
	if fromList[audit.DecisionFail] == 0 {
		delete(fromList, audit.DecisionFail)
	}
	if !reflect.DeepEqual(perKind, fromList) {
		t.Fatalf("decisions per run add up to %v, per plugin to %v", perKind, fromList)
	}
	for name, n := range calls {
		if byPlugin[name].Calls != n {
			t.Fatalf("plugin %s: %d calls in totals, %d over its stages", name, byPlugin[name].Calls, n)
		}
	}
	if len(byPlugin) != len(calls) {
		t.Fatalf("%d plugins in totals, %d in the list", len(byPlugin), len(calls))
	}

	if got, want := audit.SessionsOf(rs.List()), ss.List(); !reflect.DeepEqual(got, want) {
		t.Fatalf("SessionsOf %+v\nSessions.List %+v", got, want)
	}
}
