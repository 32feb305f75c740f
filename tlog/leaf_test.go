package tlog_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/tlog"
)

// vectorEvent is the event of docs/PROTOCOL.md's leaf test vector.
func vectorEvent() *events.Event {
	return &events.Event{
		ID: "01JD2Q7N3W6C5X0P8E9R4T1Y2B", Stage: events.StageToolAfter, Source: "hookbus/loop",
		Time:    time.Date(2025, 1, 2, 3, 4, 5, 600000000, time.UTC),
		Subject: "calculator", AgentID: "demo", SessionID: "s1", RunID: "01JD2Q7N3W6C5X0P8E9R4T1Y2C", Step: 1, Seq: 7,
		PrevHash: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Data:     []byte(`{"result":{"content":"42"}}`),
	}
}

// The leaf of an event is its canonical form after the sequence, kind and
// subject lines, and its hash is RFC 6962's. The vector is the one
// docs/PROTOCOL.md gives verifiers in other languages.
func TestLeafVector(t *testing.T) {
	e := vectorEvent()
	entry := tlog.Entry{Forms: [][]byte{tlog.EventForm("hookbus.evt.demo.s1.tool.after", e, sha256.Sum256(e.Data))}}
	leaf := entry.Leaf(42, 0)
	want := "hookbus-leaf-v1\n42\nevent\nhookbus.evt.demo.s1.tool.after\n" + string(e.Canonical(sha256.Sum256(e.Data))) + "\n"
	if string(leaf) != want {
		t.Fatalf("leaf:\n%s\nwant:\n%s", leaf, want)
	}
	h := tlog.HashLeaf(leaf)
	sum := sha256.Sum256(append([]byte{0}, leaf...))
	if h != tlog.Hash(sum) {
		t.Fatal("the leaf hash is not SHA-256(0x00 || leaf)")
	}
	const golden = "689a68bd18d226ab9e8b9d5d043c7b3e13d004cb4b866584dc54804a8b1803f9"
	if got := hex.EncodeToString(h[:]); got != golden {
		t.Fatalf("leaf hash %s, want %s", got, golden)
	}
	gap := tlog.HashLeaf(tlog.GapLeaf(43))
	if g := hex.EncodeToString(gap[:]); g != "9dc35e7f50c4689080239918e1ba49b9f3f736c93befeb1627a5b81d77c5a482" {
		t.Fatalf("gap leaf hash %s", g)
	}

	info, err := tlog.ParseLeaf(leaf)
	if err != nil {
		t.Fatal(err)
	}
	if info.Seq != 42 || info.Kind != tlog.KindEvent || info.EventID != e.ID || info.RunID != e.RunID || info.RunSeq != 7 ||
		info.PrevHash != e.PrevHash || info.ChainHash != e.ChainHash() || info.Subject != "hookbus.evt.demo.s1.tool.after" {
		t.Fatalf("parsed back: %+v", info)
	}
}

// A message that is not an event is a leaf of its subject, headers and
// body; another header, another value order or another body is another
// leaf.
func TestMessageLeaf(t *testing.T) {
	h := map[string][]string{"b": {"2", "1"}, "a": {"x y"}}
	leaf := tlog.Entry{Forms: [][]byte{tlog.MessageForm("hookbus.evt.x", h, []byte("not json"))}}.Leaf(3, 0)
	body := sha256.Sum256([]byte("not json"))
	want := "hookbus-leaf-v1\n3\nmessage\nhookbus.evt.x\n3\na x%20y\nb 2\nb 1\n" + hex.EncodeToString(body[:]) + "\n"
	if string(leaf) != want {
		t.Fatalf("leaf:\n%q\nwant:\n%q", leaf, want)
	}
	other := tlog.Entry{Forms: [][]byte{tlog.MessageForm("hookbus.evt.x", map[string][]string{"b": {"1", "2"}, "a": {"x y"}}, []byte("not json"))}}.Leaf(3, 0)
	if string(other) == string(leaf) {
		t.Fatal("header values in another order give the same leaf")
	}
	if info, err := tlog.ParseLeaf(leaf); err != nil || info.Kind != tlog.KindMessage || info.Seq != 3 {
		t.Fatalf("parsed back: %+v, %v", info, err)
	}
	for _, bad := range []string{"", "hookbus-leaf-v1\n0\ngap\n", "hookbus-leaf-v1\n01\ngap\n", "hookbus-leaf-v2\n1\ngap\n", "hookbus-leaf-v1\n1\nother\n"} {
		if _, err := tlog.ParseLeaf([]byte(bad)); !errors.Is(err, tlog.ErrMalformed) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
