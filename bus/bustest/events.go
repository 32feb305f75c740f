package bustest

import (
	"strings"
	"testing"

	"github.com/hookbus/hookbus/events"
)

// Event builds a valid event of stage for agent/session/run with the
// stage's empty payload (a tool.before calls "search").
func Event(t testing.TB, agent, session, run string, stage events.Stage, seq uint64) *events.Event {
	t.Helper()
	payload, err := events.PayloadFor(stage)
	if err != nil {
		t.Fatal(err)
	}
	if tb, ok := payload.(*events.ToolBefore); ok {
		tb.Call = events.ToolCall{ID: "c1", Name: "search", Arguments: []byte(`{"q":"hookbus"}`)}
	}
	e, err := events.New(stage, events.Meta{
		Source: "hookbus/test", AgentID: agent, SessionID: session, RunID: run, Step: 1, Seq: seq,
	}, payload)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// SizedEvent builds a tool.after event whose JSON data is about size bytes.
func SizedEvent(t testing.TB, agent, session, run string, seq uint64, size int) *events.Event {
	t.Helper()
	e, err := events.New(events.StageToolAfter, events.Meta{
		Source: "hookbus/bench", AgentID: agent, SessionID: session, RunID: run, Step: 1, Seq: seq,
	}, events.ToolAfter{Result: events.ToolResult{CallID: "c1", Name: "search", Content: strings.Repeat("x", size)}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}
