package policy

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hookbus/hookbus/events"
)

// callPayloads are tool stages' payloads, the usual and the odd: each is
// read as encoding/json reads it, by the fast reader or by falling back.
var callPayloads = []string{
	`{"call":{"id":"call_1_1","name":"Bash","arguments":{"command":"git status && ls -la /tmp"},"action":{"kind":"shell","command":"git status && ls -la /tmp"}}}`,
	`{"call":{"id":"c","name":"Edit","arguments":{"file_path":"/w/.env","old_string":"a","new_string":"b"},"action":{"kind":"file.edit","paths":["/w/.env"]}}}`,
	`{"call":{"id":"c","name":"apply_patch","arguments":{"input":"*** Begin Patch\n*** Update File: a\n"},"action":{"kind":"file.edit","paths":["a","b/c"]}}}`,
	`{"call":{"id":"c","name":"WebFetch","arguments":{"url":"https://e.com/é","prompt":"x"},"action":{"kind":"web.fetch","url":"https://e.com/é"}}}`,
	`{"call":{"id":"c","name":"mcp__gh__pr","arguments":{},"action":{"kind":"mcp","server":"gh","mcp_tool":"pr"}}}`,
	`{"call":{"id":"c","name":"Bash","arguments":{"command":"echo \"hi\" \u00e9 \\\\"},"action":{"kind":"shell","command":"echo \"hi\" \u00e9 \\\\"}}}`,
	` { "call" : { "name" : "x" , "arguments" : [ 1 , { "a" : [ ] } ] , "action" : { "kind" : "other" , "paths" : [ ] } } , "result" : null } `,
	`{"result":{"content":"x","is_error":false},"call":{"name":"Read","arguments":"not json","action":{"kind":"file.read","paths":["a"],"query":"q"}},"context":"c"}`,
	`{"call":{"name":"n","arguments":12.5e3,"extra":[true,false,null,-1],"action":{"kind":"k","unknown":{"x":"}"}}}}`,
	`{"call":{"name":"n","arguments":null}}`,
	`{"call":{"name":"n","action":null}}`,
	`{"call":null}`,
	`{"call":5}`,
	`{"call":{"name":5}}`,
	`{"call":{"action":{"paths":null}}}`,
	`{"call":{"action":{"paths":["a",1]}}}`,
	`{"call":{"name":"a"},"call":{"id":"b"}}`,
	`{"Call":{"name":"a"}}`,
	`{"call":{"NAME":"a","Action":{"Kind":"shell"}}}`,
	`{"ca\u006cl":{"name":"a"}}`,
	`{"call":{"name":"bad \xff utf8","action":{"command":"\xfe"}}}`,
	"{\"call\":{\"name\":\"bad \xff utf8 \xe9\",\"action\":{\"kind\":\"a\xfe\",\"paths\":[\"\xc3\"]}}}",
	`{"call":{"name":"a"}`,
	`[{"call":{}}]`,
	`"call"`,
	`null`,
	`{}`,
	`{"other":{"call":{"name":"nested"}}}`,
	`{"call":{"id":"\ud83d\ude00","name":"\ud800"}}`,
	`{"call":{"id":"\ud800\u0041","name":"\udc00\ud800x","action":{"kind":"shell","command":"\ud83dz \uD83D\uDE00\u00E9\b\f\n\r\t\/"}}}`,
	`{"call":{"name":"Bash","arguments":{"command":"make \u0026\u0026 cat a \u003e b"},"action":{"kind":"shell","command":"make \u0026\u0026 cat a \u003e b","paths":["\u003c\u003e","é\u00e9\xff"]}}}`,
}

// TestReadCall: the fast reader reads every payload as encoding/json does.
func TestReadCall(t *testing.T) {
	fast := 0
	for _, p := range callPayloads {
		if checkReadCall(t, []byte(p)) {
			fast++
		}
	}
	if fast < 12 {
		t.Errorf("the fast reader read %d payloads, want at least the 12 usual ones", fast)
	}
}

// FuzzReadCall holds the fast reader to encoding/json on any payload.
func FuzzReadCall(f *testing.F) {
	for _, p := range callPayloads {
		f.Add([]byte(p))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkReadCall(t, data)
	})
}

// checkReadCall fails t unless InputFrom reads the same call from data as
// encoding/json; it reports whether the fast reader read it.
func checkReadCall(t *testing.T, data []byte) bool {
	t.Helper()
	ev := &events.Event{Stage: events.StageToolBefore, Data: data}
	got, gerr := InputFrom(ev, "")
	want, werr := inputFrom(ev, "", true)
	if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
		t.Fatalf("%s: error %v, encoding/json %v", data, gerr, werr)
	}
	if gerr == nil && !reflect.DeepEqual(got.Call, want.Call) {
		g, _ := json.Marshal(got.Call)
		w, _ := json.Marshal(want.Call)
		t.Fatalf("%s:\nread          %s %#v\nencoding/json %s %#v", data, g, got.Call, w, want.Call)
	}
	_, ok := readCall(data)
	return ok
}

// BenchmarkInputFrom is reading a shell call from its payload: with the
// fast reader, and with encoding/json (what it replaces).
func BenchmarkInputFrom(b *testing.B) {
	ev := &events.Event{Stage: events.StageToolBefore, Data: []byte(callPayloads[0])}
	for _, c := range []struct {
		name      string
		reference bool
	}{{"fast", false}, {"encoding-json", true}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if in, err := inputFrom(ev, "", c.reference); err != nil || in.Call == nil {
					b.Fatal(err)
				}
			}
		})
	}
}
