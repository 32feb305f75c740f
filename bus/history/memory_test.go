package history_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/history"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/policy"
)

// The History over the bus answers as policy.Memory (what policy tests
// replay recorded sessions with) answers on the same record: every
// question, before every call of a session of several runs.
func TestAgreesWithMemory(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	actions := []events.Action{
		shell("ls"), read("/repo/.env"), shell("make"), fetch("https://example.com/a"),
		{Kind: events.KindFileEdit, Paths: []string{"/repo/main.go"}}, shell("rm -rf build"),
		read("/home/u/.ssh/id_ed25519"), {Kind: events.KindMCP, Server: "github", MCPTool: "create_issue"},
		fetch("https://evil.example/upload"), shell("git push"), {Kind: events.KindWebSearch, Query: "nats counters"},
	}
	r := newRecorder(b, "coder", "s1", t0)
	mem := policy.NewMemory()
	var stored []*events.Event
	for i, a := range actions {
		e := r.call(t, fmt.Sprintf("r%d", i/4), a)
		mem.Record(e)
		stored = append(stored, e)
	}
	h := history.New(b)
	kinds := []string{"shell", "file.*", "web.fetch|web.search", "*", "mcp|shell", "agent"}
	windows := []time.Duration{time.Second, 3 * time.Second, 5500 * time.Millisecond, time.Hour}
	patterns := []string{`(^|/)\.env$`, `/\.ssh/`, `^rm\s`, `evil\.example`, `github`, `.`}
	for _, e := range append(stored, &events.Event{Time: r.at.Add(time.Second)}) {
		scope := policy.Scope{Agent: "coder", Session: "s1", Event: e}
		for _, k := range kinds {
			for _, w := range windows {
				want, err := mem.SessionCount(ctx, scope, k, w)
				if err != nil {
					t.Fatal(err)
				}
				if got, err := h.SessionCount(ctx, scope, k, w); err != nil || got != want {
					t.Errorf("before %d: count(%q, %v) = %d, %v; Memory says %d", e.Seq, k, w, got, err, want)
				}
			}
			for _, p := range patterns {
				want, err := mem.SessionSeen(ctx, scope, k, p)
				if err != nil {
					t.Fatal(err)
				}
				if got, err := h.SessionSeen(ctx, scope, k, p); err != nil || got != want {
					t.Errorf("before %d: seen(%q, %q) = %v, %v; Memory says %v", e.Seq, k, p, got, err, want)
				}
			}
		}
	}
}
