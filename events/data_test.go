package events_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/hookbus/hookbus/events"
)

func TestData(t *testing.T) {
	m := events.Meta{Source: "test", AgentID: "a", SessionID: "s", RunID: "r", Step: 1, Seq: 1}
	call := events.ToolCall{ID: "c1", Name: "Bash", Arguments: json.RawMessage(`{"cmd":"ls"}`)}
	e, err := events.New(events.StageToolBefore, m, events.ToolBefore{Call: call})
	if err != nil {
		t.Fatal(err)
	}
	got, err := events.Data[events.ToolBefore](e)
	if err != nil || got.Call.ID != "c1" || got.Call.Name != "Bash" {
		t.Fatalf("Data[ToolBefore] = %+v, %v", got, err)
	}
	// Another stage's type is refused, naming the event.
	if _, err := events.Data[events.ToolAfter](e); !errors.Is(err, events.ErrPayload) {
		t.Fatalf("Data[ToolAfter] of a tool.before: %v, want ErrPayload", err)
	}
	// Data that does not decode as the stage's type.
	bad := e.Clone()
	bad.Data = json.RawMessage(`{"call":"nope"}`)
	if _, err := events.Data[events.ToolBefore](bad); !errors.Is(err, events.ErrPayload) {
		t.Fatalf("undecodable data: %v, want ErrPayload", err)
	}
	// Data stored elsewhere (a claim check) and not fetched.
	ref := e.Clone()
	ref.Data, ref.DataRef = nil, "objstore/x"
	if _, err := events.Data[events.ToolBefore](ref); !errors.Is(err, events.ErrPayload) {
		t.Fatalf("unfetched data: %v, want ErrPayload", err)
	}
}

// Every stage's payload type is the one Data accepts for it, and the one
// PayloadFor makes.
func TestDataAcceptsEachStagesPayload(t *testing.T) {
	for _, st := range events.Stages() {
		p, err := events.PayloadFor(st)
		if err != nil {
			t.Fatal(err)
		}
		e, err := events.New(st, events.Meta{Source: "test", AgentID: "a", SessionID: "s", RunID: "r", Seq: 1}, reflect.ValueOf(p).Elem().Interface())
		if err != nil {
			t.Fatalf("%s: %v", st, err)
		}
		if _, err := e.Payload(); err != nil {
			t.Errorf("%s: Payload: %v", st, err)
		}
		if _, err := events.Data[events.HookDecided](e); (err == nil) != (st == events.StageHookDecided) {
			t.Errorf("%s: Data[HookDecided]: %v", st, err)
		}
	}
}
