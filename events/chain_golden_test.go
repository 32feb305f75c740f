package events_test

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
)

// The canonical form is a wire format (a verifier in another language
// recomputes it): these bytes and this hash must never change.
func TestCanonicalBytesAreFixed(t *testing.T) {
	e := &events.Event{
		ID: "01JDGZ6S7Q1XZ3V5J0K6F8E2AB", Stage: events.StageToolBefore, Source: "hookbus/loop",
		Time:    time.Date(2026, 11, 29, 12, 0, 0, 123456000, time.FixedZone("x", 3600)),
		Subject: "calc ulator%\"é", AgentID: "agent-1", SessionID: "s1", RunID: "r1", Step: 3, Seq: 12,
		ParentAgentID: "pa", ParentSessionID: "ps", ParentRunID: "pr",
		PrevHash: "abc", Signer: "UX", Signature: "ignored",
		Data: []byte(`{"call":{"name":"calculator"}}`),
	}
	want := "hookbus-chain-v1\n01JDGZ6S7Q1XZ3V5J0K6F8E2AB\nhookbus.tool.before\nhookbus/loop\n2026-11-29T11:00:00.123456Z\n" +
		"calc%20ulator%25%22%C3%A9\nagent-1\ns1\nr1\n3\n12\npa\nps\npr\nabc\nUX\n" +
		"4ee680b76f2d73fcf62cb78521e6dbc8fbe3cf1de63d7bd9422cda2d3377bdf0\n"
	if got := string(e.Canonical(sha256.Sum256(e.Data))); got != want {
		t.Fatalf("canonical form\n got %q\nwant %q", got, want)
	}
	if got, want := e.ChainHash(), "0fcf0cbc5e7715061c0be8d3c91d12c7cc1819aebe4c38491bc71fb347adc3e2"; got != want {
		t.Fatalf("chain hash %s, want %s", got, want)
	}
}

func BenchmarkChainHash(b *testing.B) {
	e, err := events.New(events.StageToolAfter, events.Meta{Source: "hookbus/loop", AgentID: "agent-1", SessionID: "s1", RunID: "r1", Step: 1, Seq: 7},
		events.ToolAfter{Result: events.ToolResult{Content: "42"}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = e.ChainHash()
	}
}
