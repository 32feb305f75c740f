package claudecode_test

import (
	"encoding/json"
	"testing"

	"github.com/hookbus/hookbus/events"
)

// event builds an event of stage with payload; subject is its subject.
func event(t *testing.T, stage events.Stage, subject string, payload any) *events.Event {
	t.Helper()
	ev, err := events.New(stage, events.Meta{
		Source: "test", AgentID: "coder", SessionID: "s1", RunID: "r1", Step: 1, Subject: subject,
	}, payload)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func toolBefore(t *testing.T, tool, args string) *events.Event {
	return event(t, events.StageToolBefore, tool, events.ToolBefore{Call: events.ToolCall{ID: "call-1", Name: tool, Arguments: json.RawMessage(args)}})
}

func toolAfter(t *testing.T, tool, args, content string) *events.Event {
	return event(t, events.StageToolAfter, tool, events.ToolAfter{
		Call:   events.ToolCall{ID: "call-1", Name: tool, Arguments: json.RawMessage(args)},
		Result: events.ToolResult{CallID: "call-1", Name: tool, Content: content},
	})
}

// fields decodes JSON into a map for assertions.
func fields(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func payloadOf[T any](t *testing.T, data json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("payload %s: %v", data, err)
	}
	return v
}
