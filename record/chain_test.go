package record_test

import (
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/record"
)

type fixedSigner struct{}

func (fixedSigner) PublicKey() (string, error)    { return "UKEY", nil }
func (fixedSigner) Sign(b []byte) ([]byte, error) { return []byte("sig"), nil }

// A run's events numbered and chained one after another, its end signed.
func TestChain(t *testing.T) {
	ev := func(st events.Stage, p any) *events.Event {
		t.Helper()
		e, err := events.New(st, events.Meta{Source: "test", AgentID: "a", SessionID: "s", RunID: "r"}, p)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	first, end := ev(events.StageRunStarted, events.RunStarted{Prompt: "hi"}), ev(events.StageRunCompleted, events.RunCompleted{Reason: events.ReasonDone})
	var c record.Chain
	after := c.Next(first)
	if c.Seq != 0 || first.Seq != 1 || first.PrevHash != "" || after != (record.Chain{Seq: 1, Hash: first.ChainHash()}) {
		t.Fatalf("first: %+v, seq %d prev %q; chain before %+v", after, first.Seq, first.PrevHash, c)
	}
	last, err := after.NextSigned(end, fixedSigner{})
	if err != nil {
		t.Fatal(err)
	}
	if end.Seq != 2 || end.PrevHash != first.ChainHash() || end.Signer != "UKEY" || end.Signature == "" || last.Hash != end.ChainHash() {
		t.Fatalf("end: seq %d prev %q signer %q signature %q; chain %+v", end.Seq, end.PrevHash, end.Signer, end.Signature, last)
	}
	mid := ev(events.StageStepStarted, events.StepStarted{Step: 1})
	if _, err := after.NextSigned(mid, fixedSigner{}); err != nil || mid.Signer != "" {
		t.Fatalf("a run's other events are not signed: %q, %v", mid.Signer, err)
	}
}

// Heads keeps each run's event with the largest seq, whatever the order
// added; an event without a seq moves nothing.
func TestHeads(t *testing.T) {
	ev := func(run string, seq uint64) *events.Event {
		e, err := events.New(events.StageStepStarted, events.Meta{Source: "t", AgentID: "a", SessionID: "s", RunID: run}, events.StepStarted{})
		if err != nil {
			t.Fatal(err)
		}
		e.Seq = seq
		return e
	}
	a2, a1, a0, b1 := ev("a", 2), ev("a", 1), ev("a", 0), ev("b", 1)
	var h record.Heads
	if c := h.Chain("a"); c != (record.Chain{}) || h.Last("a") != nil {
		t.Fatalf("empty heads: %+v", c)
	}
	for _, e := range []*events.Event{a2, a1, a0, b1} {
		h.Add(e)
	}
	if h.Last("a") != a2 || h.Last("b") != b1 || h.Last("c") != nil {
		t.Fatalf("last of a %v, of b %v, of c %v", h.Last("a"), h.Last("b"), h.Last("c"))
	}
	if c := h.Chain("a"); c.Seq != 2 || c.Hash != a2.ChainHash() {
		t.Fatalf("chain of a: %+v", c)
	}
	h.Add(ev("c", 0))
	if c := h.Chain("c"); c != (record.Chain{}) {
		t.Fatalf("a run with only an event without a seq stands at %+v", c)
	}
}
