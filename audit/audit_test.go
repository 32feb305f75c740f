package audit_test

import (
	"errors"
	"testing"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/audit/audittest"
	"github.com/hookbus/hookbus/events"
)

func fold(t *testing.T, adders ...interface{ Add(*events.Event) }) []*events.Event {
	t.Helper()
	evs := audittest.Stream(t)
	for _, e := range evs {
		for _, a := range adders {
			a.Add(e)
		}
	}
	return evs
}

func TestRuns(t *testing.T) {
	var rs audit.Runs
	fold(t, &rs)
	list := rs.List()
	if len(list) != 16 {
		t.Fatalf("%d runs, want 16", len(list))
	}
	status := map[string]int{}
	for _, r := range list {
		status[r.Status]++
	}
	if status["done"] != 13 || status["denied"] != 2 || status["stopped"] != 1 {
		t.Fatalf("statuses %v", status)
	}
	// A sub-agent's run names its parent, the parent its child.
	child, ok := rs.Get("01KDYEK34F8C00000000000007")
	if !ok || child.Parent == nil || child.Parent.RunID != "01KDYEK349A800000000000001" || child.AgentID != "helper" {
		t.Fatalf("child run %+v", child)
	}
	parent, _ := rs.Get("01KDYEK349A800000000000001")
	if len(parent.Children) != 1 || parent.Children[0] != child.RunID {
		t.Fatalf("parent's children %v", parent.Children)
	}
	// A run that waited for a human: two attempts.
	approved, _ := rs.Get("01KDYDK349A800000000000001")
	if approved.Attempts != 2 || approved.Steps != 2 || approved.Usage.InputTokens != 37 || approved.DurationMS != 19 {
		t.Fatalf("approved run %+v", approved)
	}
	denied, _ := rs.Get("01KDYCK34TA80000000000000J")
	if denied.Detail != "guard: no tools today" {
		t.Fatalf("denied run detail %q", denied.Detail)
	}
}

func TestRunsUnfinishedAndWaiting(t *testing.T) {
	var rs audit.Runs
	for _, e := range audittest.Stream(t, "approval-waiting", "outcome-unknown") {
		rs.Add(e)
	}
	got := map[string]string{}
	for _, r := range rs.List() {
		got[r.SessionID] = r.Status
	}
	if got["approval-waiting"] != audit.StatusWaiting || got["outcome-unknown"] != audit.StatusUnfinished {
		t.Fatalf("statuses %v", got)
	}
}

func TestSessions(t *testing.T) {
	var ss audit.Sessions
	fold(t, &ss)
	list := ss.List()
	if len(list) != 7 {
		t.Fatalf("%d sessions, want 7", len(list))
	}
	last := list[len(list)-1]
	if last.SessionID != "compacted" || last.Runs != 4 || last.LastStatus != "done" || last.LastRunID != "01KDYFK35XA80000000000001N" {
		t.Fatalf("most recent session %+v", last)
	}
	for _, s := range list {
		if s.AgentID == "helper" && (s.Parent == nil || s.Parent.SessionID != "subagent") {
			t.Fatalf("a sub-agent's session without its parent: %+v", s)
		}
	}
}

func TestStats(t *testing.T) {
	var st audit.Stats
	fold(t, &st)
	by := map[string]audit.PluginStats{}
	for _, p := range st.List() {
		by[p.Plugin+" "+string(p.Stage)] = p
	}
	if p := by["checker model.responded"]; p.Calls != 1 || p.Failures[events.FailError] != 1 || p.FailedClosed != 1 || p.Failed() != 1 {
		t.Fatalf("checker %+v", p)
	}
	if p := by["signer model.responded"]; p.Calls != 2 || p.Decisions["allow"] != 1 || p.Decisions["modify"] != 1 {
		t.Fatalf("signer %+v", p)
	}
	if p := by["eval tool.before"]; p.Decisions["mock"] != 1 {
		t.Fatalf("eval %+v", p)
	}
}

func TestStatsPercentiles(t *testing.T) {
	var st audit.Stats
	for i := 1; i <= 200; i++ {
		e, err := events.New(events.StageHookDecided, events.Meta{Source: "t", AgentID: "a", SessionID: "s", RunID: "r"},
			events.HookDecided{Plugin: "p", Stage: events.StageToolBefore, Decision: "allow", LatencyUS: int64(i)})
		if err != nil {
			t.Fatal(err)
		}
		st.Add(e)
	}
	p := st.List()[0]
	if p.P50US != 100 || p.P99US != 198 || p.MaxUS != 200 || p.Calls != 200 {
		t.Fatalf("percentiles %+v", p)
	}
}

func TestShowPrefixAndChildren(t *testing.T) {
	sh := audit.NewShow("01KDYEK3")
	fold(t, sh)
	// The prefix matches the two parents and their two children.
	if got := sh.Runs(); len(got) != 4 {
		t.Fatalf("prefix matched %v", got)
	}
	tr, err := sh.Tree("01KDYEK349A800000000000001")
	if err != nil {
		t.Fatal(err)
	}
	var sub *audit.Item
	walk(tr.Items, func(it *audit.Item) {
		if it.Kind == audit.KindSubagent {
			sub = it
		}
	})
	if sub == nil || sub.Child == nil || sub.Child.Run.RunID != "01KDYEK34F8C00000000000007" || sub.Subagent.After == nil {
		t.Fatalf("sub-agent item %+v", sub)
	}
	if len(tr.Children) != 0 {
		t.Fatalf("children outside their items: %d", len(tr.Children))
	}
	if _, err := sh.Tree("nope"); !errors.Is(err, audit.ErrNoRun) {
		t.Fatalf("Tree of a run not held: %v", err)
	}
}

func TestShowPatchAsChange(t *testing.T) {
	sh := audit.NewShow("01KDYBK349A800000000000001")
	fold(t, sh)
	tr, err := sh.Tree("01KDYBK349A800000000000001")
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	walk(tr.Items, func(it *audit.Item) {
		for _, h := range it.Hooks {
			if h.Plugin != "rewriter" {
				continue
			}
			found = true
			if len(h.Changes) != 1 {
				t.Fatalf("changes %+v", h.Changes)
			}
			c := h.Changes[0]
			if !c.BeforeKnown || string(c.Before) != `"6*7"` || string(c.After) != `"6*9"` || c.Path != "/call/arguments/expression" {
				t.Fatalf("change %+v", c)
			}
		}
	})
	if !found {
		t.Fatal("the rewriter's decision is not in the tree")
	}
}

func TestShowApprovals(t *testing.T) {
	sh := audit.NewShow("01KDYDK349A800000000000001")
	fold(t, sh)
	tr, _ := sh.Tree("01KDYDK349A800000000000001")
	var ap *audit.Item
	walk(tr.Items, func(it *audit.Item) {
		if it.Kind == audit.KindApproval {
			ap = it
		}
	})
	if ap == nil || ap.Approval.Resolved == nil || ap.Approval.Resolved.By != "alice" || ap.Approval.Requested.Plugin != "human" {
		t.Fatalf("approval %+v", ap)
	}
}

func walk(items []*audit.Item, fn func(*audit.Item)) {
	for _, it := range items {
		fn(it)
		walk(it.Items, fn)
	}
}
