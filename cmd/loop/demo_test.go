package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// The demo hook, run by a chain as the loop runs it: the clock's result
// loses its time of day, other tools and failed calls are left alone.
func TestDemoHook(t *testing.T) {
	chain := interceptors.NewChain()
	if err := registerDemoHook(chain); err != nil {
		t.Fatal(err)
	}
	after := func(tool, content string, isErr bool) *events.Event {
		e, err := events.New(events.StageToolAfter, events.Meta{Source: "test", AgentID: "demo", SessionID: "s", RunID: "r", Subject: tool},
			events.ToolAfter{Call: events.ToolCall{ID: "c1", Name: tool, Arguments: json.RawMessage(`{}`)},
				Result: events.ToolResult{CallID: "c1", Name: tool, Content: content, IsError: isErr}})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	e := after("clock", "2026-11-23T15:18:46Z", false)
	if !chain.Has(e.Stage, e.Subject, e.AgentID) {
		t.Fatal("the demo hook does not match the clock")
	}
	out, err := chain.Run(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	var p events.ToolAfter
	if err := json.Unmarshal(out.Data, &p); err != nil {
		t.Fatal(err)
	}
	if out.Decision != interceptors.Modify || p.Result.Content != "2026-11-23 (time of day redacted by the demo-redactor hook)" {
		t.Fatalf("clock: %s %+v", out.Decision, p.Result)
	}
	if e := after("calculator", "42", false); chain.Has(e.Stage, e.Subject, e.AgentID) {
		t.Fatal("the demo hook matches the calculator")
	}
	out, err = chain.Run(context.Background(), after("clock", "clock failed", true))
	if err != nil || out.Decision != interceptors.Allow {
		t.Fatalf("a failed clock call: %v %v", out, err)
	}
}
