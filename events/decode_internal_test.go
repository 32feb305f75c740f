package events

import (
	"errors"
	"strings"
	"testing"
)

// TestFastDecodeAllocatesOnce: a canonical message is read by the direct
// decoder into the event and nothing else.
func TestFastDecodeAllocatesOnce(t *testing.T) {
	e, err := New(StageToolBefore, Meta{Source: "hookbus/test", AgentID: "agent", SessionID: "sess", RunID: "run1", Step: 1, Seq: 1},
		ToolBefore{Call: ToolCall{ID: "c1", Name: "search", Arguments: []byte(`{"q":"` + strings.Repeat("x", 256) + `"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	h, body, err := Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	if fastDecode(h, body) == nil {
		t.Fatal("the direct decoder refused a canonical message")
	}
	if n := testing.AllocsPerRun(100, func() { _ = fastDecode(h, body) }); n != 1 {
		t.Fatalf("fastDecode allocates %v times, want 1 (the event)", n)
	}
}

// TestFastDecodeChecksWhatItParsed: what the direct decoder parses and no
// longer checks again (a known stage, a source, a time) is refused when it
// is wrong, with Decode's named error.
func TestFastDecodeChecksWhatItParsed(t *testing.T) {
	e, err := New(StageToolBefore, Meta{Source: "hookbus/test", AgentID: "agent", SessionID: "sess", RunID: "run1", Step: 1, Seq: 1},
		ToolBefore{Call: ToolCall{ID: "c1", Name: "search"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ key, value string }{
		{"ce-type", "hookbus.tool.sideways"},
		{"ce-type", "tool.before"},
		{"ce-source", ""},
		{"ce-time", "0001-01-01T00:00:00Z"},
		{"ce-time", "yesterday"},
		{"ce-id", "not-a-ulid"},
		{"ce-step", "-1"},
	} {
		h, body, err := Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		h[tc.key] = []string{tc.value}
		if got := fastDecode(h, body); got != nil {
			t.Errorf("%s %q: the direct decoder accepted it", tc.key, tc.value)
		}
		if _, err := Decode(h, body); !errors.Is(err, ErrMalformedEvent) && !errors.Is(err, ErrInvalidID) {
			t.Errorf("%s %q: Decode error %v, want ErrMalformedEvent or ErrInvalidID", tc.key, tc.value, err)
		}
	}
}
