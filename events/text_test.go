package events_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/events"
)

func TestQuote(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{`rm -rf "/var/data"`, 0, `"rm -rf "/var/data""`},
		{"ls -la && cat main.py > out.txt", 0, `"ls -la && cat main.py > out.txt"`},
		{`C:\temp  and	tabs` + "\n" + "lines", 0, `"C:\temp and tabs lines"`},
		{"café ☕", 0, `"café ☕"`},
		{"bell\x07 and escape\x1b[31m", 0, `"bell\a and escape\x1b[31m"`},
		{"abcdef", 3, `"abc…"`},
		{"ééééé", 4, `"éééé…"`},
	} {
		if got := events.Quote(tc.in, tc.max); got != tc.want {
			t.Errorf("Quote(%q, %d) = %s, want %s", tc.in, tc.max, got, tc.want)
		}
	}
}

func TestReadableJSON(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"command": "ls -la \u0026\u0026 cat main.py \u003e out.txt"}`, `{"command":"ls -la && cat main.py > out.txt"}`},
		{`{"b":1,"a":"x \u003cy\u003e"}`, `{"b":1,"a":"x <y>"}`},           // key order kept
		{`{"q":"say \"hi\" \\u0026 go"}`, `{"q":"say \"hi\" \\u0026 go"}`}, // an escaped backslash, then text
		{`["caf\u00e9", "\ud83d\ude00", "\u0022", "\u005c", "\u001b", "\ud800"]`, `["café","😀","\u0022","\u005c","\u001b","\ud800"]`},
		{`{"n": 1.50e3, "big": 12345678901234567890}`, `{"n":1.50e3,"big":12345678901234567890}`},
		{`not json \u0026`, `not json \u0026`},
	} {
		if got := string(events.ReadableJSON([]byte(tc.in))); got != tc.want {
			t.Errorf("ReadableJSON(%s)\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

// ReadableJSON leaves a valid JSON document that decodes to the same value.
func FuzzReadableJSON(f *testing.F) {
	for _, s := range []string{`{"a":"x \u0026 y"}`, `["\ud83d\ude00","\\u0026"]`, `"\u00e9\u0000"`, `{"a":[1,2,{"b":null}]}`, `"\ud83d"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var want any
		if json.Unmarshal([]byte(in), &want) != nil {
			return
		}
		out := events.ReadableJSON([]byte(in))
		var got any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("ReadableJSON(%q) = %q: not JSON: %v", in, out, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("ReadableJSON(%q) = %q: decodes to %#v, want %#v", in, out, got, want)
		}
	})
}

// Summaries, which loop --trace, observer replay and the web page print,
// show the text people typed: no JSON or Go escapes.
func TestSummaryReadable(t *testing.T) {
	call := events.ToolCall{ID: "c1", Name: "Bash", Arguments: json.RawMessage(`{"command":"ls -la && cat main.py > out.txt"}`)}
	m := events.Meta{Source: "test", AgentID: "a", SessionID: "s", RunID: "r"}
	before, err := events.New(events.StageToolBefore, m, events.ToolBefore{Call: call})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(before.Data), `\u0026\u0026`) {
		t.Fatalf("the payload is not written as encoding/json writes it (the case this test is about): %s", before.Data)
	}
	asked, err := events.New(events.StageApprovalRequested, m, events.ApprovalRequested{Call: call, Plugin: "guard", Reason: `"rm |git push" needs a human`})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		e    *events.Event
		want string
	}{
		{before, `Bash{"command":"ls -la && cat main.py > out.txt"}`},
		{asked, `Bash{"command":"ls -la && cat main.py > out.txt"} asked by guard: ""rm |git push" needs a human"`},
	} {
		if got := tc.e.Summary(); got != tc.want {
			t.Errorf("%s summary\n got %s\nwant %s", tc.e.Stage, got, tc.want)
		}
	}
}
