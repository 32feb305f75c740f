package audit_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/audit/audittest"
	"github.com/hookbus/hookbus/events"
)

// Over the recorded runs, every payload Before rebuilds is the one the
// chain started with: the recorded patches, replayed over it in the
// chain's order, give the payload as stored (but for a tool.after's
// context, which the loop adds after the chain).
func TestBeforeAndThePatchesGiveTheStoredPayload(t *testing.T) {
	evs := audittest.Stream(t)
	patches := map[string][]json.RawMessage{} // event id → its hooks' patches, in order
	for _, e := range evs {
		if p, err := events.Data[events.HookDecided](e); err == nil && !p.Shadow && len(p.Patch) > 0 {
			patches[p.EventID] = append(patches[p.EventID], p.Patch)
		}
	}
	var b audit.Before
	rebuilt := map[events.Stage]int{}
	for _, e := range evs {
		b.Add(e)
		doc := b.Of(e)
		if doc == nil {
			if e.Stage == events.StageToolBefore && len(patches[e.ID]) > 0 {
				t.Errorf("%s %s: patched, and its model.responded is recorded, but Before has nothing", e.Stage, e.ID)
			}
			continue
		}
		rebuilt[e.Stage]++
		for _, p := range patches[e.ID] {
			patch, err := jsonpatch.DecodePatch(p)
			if err != nil {
				t.Fatal(err)
			}
			if doc, err = patch.Apply(doc); err != nil {
				t.Fatalf("%s %s: patch %s: %v", e.Stage, e.ID, p, err)
			}
		}
		stored := e.Data
		if e.Stage == events.StageToolAfter {
			doc, stored = withoutContext(t, doc), withoutContext(t, stored)
		}
		if !sameJSON(t, doc, stored) {
			t.Errorf("%s %s: before + patches = %s\nstored: %s", e.Stage, e.ID, doc, stored)
		}
	}
	if rebuilt[events.StageToolBefore] == 0 || rebuilt[events.StageToolAfter] == 0 {
		t.Fatalf("rebuilt: %v, want tool.before and tool.after", rebuilt)
	}
}

// A tool.before's payload comes from its step's model.responded, a
// tool.after's from its tool.result; other steps' and runs' records are
// not taken, and a run's end forgets the run.
func TestBeforeOf(t *testing.T) {
	call := events.ToolCall{ID: "c1", Name: "calc", Arguments: json.RawMessage(`{"x":"6*7"}`)}
	ran := events.ToolCall{ID: "c1", Name: "calc", Arguments: json.RawMessage(`{"x":"6*9"}`)}
	res := events.ToolResult{CallID: "c1", Name: "calc", Content: "54"}
	ev := func(st events.Stage, run string, step int, p any) *events.Event {
		t.Helper()
		e, err := events.New(st, events.Meta{Source: "test", AgentID: "a", SessionID: "s", RunID: run, Step: step, Seq: 1}, p)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	before := ev(events.StageToolBefore, "r1", 1, events.ToolBefore{Call: ran})
	after := ev(events.StageToolAfter, "r1", 1, events.ToolAfter{Call: ran, Result: events.ToolResult{CallID: "c1", Name: "calc", Content: "[hidden]"}})
	var b audit.Before
	if b.Of(before) != nil || b.Of(after) != nil {
		t.Fatal("Before rebuilds a payload before its record is read")
	}
	b.Add(ev(events.StageModelResponded, "r1", 1, events.ModelResponded{Message: events.Message{Role: events.RoleAssistant, ToolCalls: []events.ToolCall{call}}}))
	b.Add(ev(events.StageToolResult, "r1", 1, events.ToolResultRecord{Call: ran, Result: res}))
	b.Add(ev(events.StageModelResponded, "r2", 1, events.ModelResponded{Message: events.Message{Role: events.RoleAssistant, ToolCalls: []events.ToolCall{ran}}}))
	want := func(got []byte, v any) {
		t.Helper()
		w, _ := json.Marshal(v)
		if !sameJSON(t, got, w) {
			t.Fatalf("Of = %s, want %s", got, w)
		}
	}
	want(b.Of(before), events.ToolBefore{Call: call})
	want(b.Of(after), events.ToolAfter{Call: ran, Result: res})
	if got := b.Of(ev(events.StageToolBefore, "r1", 2, events.ToolBefore{Call: ran})); got != nil {
		t.Errorf("a call of another step: %s", got)
	}
	if got := b.Of(ev(events.StageModelResponded, "r1", 1, events.ModelResponded{})); got != nil {
		t.Errorf("model.responded: %s (its payload before its hooks is not recorded)", got)
	}
	b.Add(ev(events.StageRunCompleted, "r1", 0, events.RunCompleted{Reason: events.ReasonDone}))
	if b.Of(before) != nil || b.Of(after) != nil {
		t.Error("the run ended, and Before still holds its calls")
	}
	want(b.Of(ev(events.StageToolBefore, "r2", 1, events.ToolBefore{Call: call})), events.ToolBefore{Call: ran})
	if got := audit.BeforeStages(events.StageToolBefore); !slices.Equal(got, []events.Stage{events.StageModelResponded, events.StageRunCompleted, events.StageRunFailed}) {
		t.Errorf("BeforeStages(tool.before) = %v", got)
	}
	if got := audit.BeforeStages(events.StageModelResponded); got != nil {
		t.Errorf("BeforeStages(model.responded) = %v", got)
	}
}

// withoutContext is a tool.after's payload without its context.
func withoutContext(t *testing.T, doc []byte) []byte {
	t.Helper()
	var p events.ToolAfter
	if err := json.Unmarshal(doc, &p); err != nil {
		t.Fatal(err)
	}
	p.Context = ""
	out, _ := json.Marshal(p)
	return out
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}
