package audit_test

import (
	"strings"
	"testing"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/events"
)

// A coding agent's run (recorded by the bridge: no step limit, no tokens
// of hookbus' counting) says neither "max 0 steps" nor "0+0 tokens"; an
// engine's run says both.
func TestCodingAgentRunText(t *testing.T) {
	build := func(started events.RunStarted, ended events.RunCompleted) string {
		t.Helper()
		meta := events.Meta{Source: "test", AgentID: "claude-code", SessionID: "s", RunID: events.NewID()}
		var evs []*events.Event
		for i, p := range []any{started, ended} {
			st := events.StageRunStarted
			if i == 1 {
				st = events.StageRunCompleted
			}
			e, err := events.New(st, meta, p)
			if err != nil {
				t.Fatal(err)
			}
			e.Seq = uint64(i + 1)
			evs = append(evs, e)
		}
		return treeText(audit.BuildTree(meta.RunID, evs))
	}
	agent := build(events.RunStarted{Prompt: "hi"}, events.RunCompleted{Reason: events.ReasonDone, Answer: "hello"})
	if strings.Contains(agent, "max 0 steps") || strings.Contains(agent, "0+0 tokens") || !strings.Contains(agent, "started") {
		t.Fatalf("a coding agent's run:\n%s", agent)
	}
	engine := build(events.RunStarted{Prompt: "hi", MaxSteps: 8}, events.RunCompleted{Reason: events.ReasonDone, Steps: 2, Usage: events.Usage{InputTokens: 10, OutputTokens: 5}})
	if !strings.Contains(engine, "max 8 steps") || !strings.Contains(engine, "[2 steps, 10+5 tokens]") {
		t.Fatalf("an engine's run:\n%s", engine)
	}
}
