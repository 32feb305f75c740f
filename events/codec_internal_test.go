package events

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The direct codec (Encode, EncodeTo, Decode) held to sdk-go's binding
// (encodeBinding, decodeBinding), the slow, obviously right reference.

func codecEvents(t *testing.T) []*Event {
	t.Helper()
	base := func(mod func(*Event)) *Event {
		e, err := New(StageToolBefore, Meta{
			Source: "hookbus/loop", AgentID: "support", SessionID: "s1", RunID: "r1", Step: 2, Seq: 7,
		}, ToolBefore{Call: ToolCall{ID: "c1", Name: "search", Arguments: json.RawMessage(`{"q":"x"}`)}})
		if err != nil {
			t.Fatal(err)
		}
		if mod != nil {
			mod(e)
		}
		return e
	}
	return []*Event{
		base(nil),
		base(func(e *Event) { e.AgentID, e.SessionID, e.RunID = `a%"é`, "sé", "r~!@#" }),
		base(func(e *Event) {
			e.Subject, e.Traceparent = "my tool", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		}),
		base(func(e *Event) { e.Time = time.Date(2024, 1, 2, 3, 4, 5, 600, time.FixedZone("x", 3600)) }),
		base(func(e *Event) { e.Time = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC) }),
		base(func(e *Event) { e.Step, e.Seq = 0, 1<<63 }),
		base(func(e *Event) { e.Step = 1<<31 - 1 }),
		base(func(e *Event) { e.DataRef, e.Data = "hookbus_payloads/01J", nil }),
		base(func(e *Event) { e.DataRef, e.Data = "obj://x y", json.RawMessage(`not json`) }),
		base(func(e *Event) { e.Source = "https://example.com/agents?x=1#f" }),
		base(func(e *Event) { e.Source = "has space" }),               // url round trip changes it
		base(func(e *Event) { e.Source = "HTTP://Example.com/%7Ex" }), // idem
		base(func(e *Event) {
			e.Stage, e.Data = StageRunCompleted, json.RawMessage(`{"reason":"done"}`)
		}),
		base(func(e *Event) { e.Data = json.RawMessage(" [1, {\"a\": \"\\u00e9\"}] ") }),
		base(func(e *Event) { e.Subject = " " }),
		base(func(e *Event) { e.Subject = " padded tool\t" }),
		base(func(e *Event) { e.ParentAgentID, e.ParentSessionID, e.ParentRunID = "planner", "s9", "r-parent" }),
		base(func(e *Event) {
			e.PrevHash, e.Signer, e.Signature = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "UABC", "c2ln_-x"
		}),
	}
}

func badEvents(t *testing.T) []*Event {
	t.Helper()
	mods := []func(*Event){
		func(e *Event) { e.ID = "nope" },
		func(e *Event) { e.Stage = "tool.sideways" },
		func(e *Event) { e.Source = "" },
		func(e *Event) { e.Time = time.Time{} },
		func(e *Event) { e.AgentID = "a.b" },
		func(e *Event) { e.SessionID = "" },
		func(e *Event) { e.RunID = "r*" },
		func(e *Event) { e.Step = -1 },
		func(e *Event) { e.Step = MaxStep + 1 },
		func(e *Event) { e.Data = json.RawMessage(`{"a":`) },
		func(e *Event) { e.Data = nil },
		func(e *Event) { e.ParentRunID = "r-parent" }, // a parent only in part
		func(e *Event) { e.ParentAgentID, e.ParentSessionID, e.ParentRunID = "a", "s", "r.x" },
	}
	var out []*Event
	for _, m := range mods {
		e := codecEvents(t)[0]
		m(e)
		out = append(out, e)
	}
	return out
}

func TestEncodeEqualsBinding(t *testing.T) {
	for i, e := range codecEvents(t) {
		h, body, err := Encode(e)
		wh, wbody, werr := encodeBinding(e)
		if err != nil || werr != nil {
			t.Fatalf("#%d: Encode err %v, binding err %v", i, err, werr)
		}
		if !reflect.DeepEqual(h, wh) {
			t.Errorf("#%d: headers differ\n got %v\nwant %v", i, h, wh)
		}
		if string(body) != string(wbody) {
			t.Errorf("#%d: body %q, want %q", i, body, wbody)
		}
	}
}

// mapSetter is a HeaderSetter into a plain map.
type mapSetter Header

func (m mapSetter) SetHeader(k, v string) { m[k] = []string{v} }

// EncodeTo writes what Encode writes but the message id, and fails as it
// does.
func TestEncodeToEqualsEncode(t *testing.T) {
	for i, e := range append(codecEvents(t), badEvents(t)...) {
		h := mapSetter{}
		body, err := EncodeTo(h, e)
		wh, wbody, werr := Encode(e)
		if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
			t.Fatalf("#%d: EncodeTo err %v, Encode err %v", i, err, werr)
		}
		if err != nil {
			continue
		}
		delete(wh, HeaderMsgID)
		if !reflect.DeepEqual(Header(h), wh) {
			t.Errorf("#%d: headers differ\n got %v\nwant %v", i, h, wh)
		}
		if string(body) != string(wbody) {
			t.Errorf("#%d: body %q, want %q", i, body, wbody)
		}
	}
}

// One set of rules: what Encode refuses, Validate refuses, in the same
// words.
func TestEncodeRejectsLikeValidate(t *testing.T) {
	for i, e := range badEvents(t) {
		_, _, err := Encode(e)
		verr := e.Validate()
		if err == nil || verr == nil || err.Error() != verr.Error() {
			t.Errorf("#%d: Encode err %v, Validate err %v", i, err, verr)
		}
	}
}

func TestDecodeEqualsBinding(t *testing.T) {
	fast := 0
	for i, e := range codecEvents(t) {
		h, body, err := Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		variants := []map[string][]string{h, upperKeys(h)}
		for j, h := range variants {
			got, err := Decode(h, body)
			want, werr := decodeBinding(h, body)
			if (err == nil) != (werr == nil) || !reflect.DeepEqual(got, want) {
				t.Errorf("#%d.%d: Decode %+v, %v\nbinding %+v, %v", i, j, got, err, want, werr)
			}
			if fastDecode(h, body) != nil {
				fast++
			}
		}
	}
	if fast < len(codecEvents(t)) {
		t.Errorf("fast path taken %d times, want most of %d", fast, 2*len(codecEvents(t)))
	}
}

func TestDecodeRejectsLikeBinding(t *testing.T) {
	e := codecEvents(t)[0]
	h, body, _ := Encode(e)
	cases := map[string]func(h map[string][]string) []byte{
		"no specversion": func(h map[string][]string) []byte { delete(h, "ce-specversion"); return body },
		"spec 0.3":       func(h map[string][]string) []byte { h["ce-specversion"] = []string{"0.3"}; return body },
		"bad type":       func(h map[string][]string) []byte { h["ce-type"] = []string{"other.x"}; return body },
		"no runid":       func(h map[string][]string) []byte { delete(h, "ce-runid"); return body },
		"bad step":       func(h map[string][]string) []byte { h["ce-step"] = []string{"1.5"}; return body },
		"big step":       func(h map[string][]string) []byte { h["ce-step"] = []string{"2147483648"}; return body },
		"bad seq":        func(h map[string][]string) []byte { h["ce-seq"] = []string{"-1"}; return body },
		"bad time":       func(h map[string][]string) []byte { h["ce-time"] = []string{"yesterday"}; return body },
		"bad escape":     func(h map[string][]string) []byte { h["ce-agentid"] = []string{"a%G1"}; return body },
		"bad id":         func(h map[string][]string) []byte { h["ce-agentid"] = []string{"a.b"}; return body },
		"xml":            func(h map[string][]string) []byte { h["content-type"] = []string{"text/xml"}; return body },
		"bad json":       func(map[string][]string) []byte { return []byte(`{"call":`) },
		"empty body":     func(map[string][]string) []byte { return nil },
		"no headers":     func(h map[string][]string) []byte { clear(h); return body },
	}
	for name, mod := range cases {
		hh := cloneHeader(h)
		b := mod(hh)
		_, err := Decode(hh, b)
		_, werr := decodeBinding(hh, b)
		if err == nil || werr == nil || !errors.Is(err, ErrMalformedEvent) && !errors.Is(err, ErrInvalidID) {
			t.Errorf("%s: Decode err %v, binding err %v", name, err, werr)
		}
	}
}

// Every slot's header name reads back as that slot.
func TestSlotKeys(t *testing.T) {
	for i, k := range slotKeys {
		if slotOf(k) != i {
			t.Errorf("slotOf(%q) = %d, want %d", k, slotOf(k), i)
		}
	}
}

func cloneHeader(h map[string][]string) map[string][]string {
	out := make(map[string][]string, len(h))
	for k, v := range h {
		out[k] = append([]string(nil), v...)
	}
	return out
}

func upperKeys(h map[string][]string) map[string][]string {
	out := make(map[string][]string, len(h))
	for k, v := range h {
		out[strings.ToUpper(k[:1])+k[1:]] = v
	}
	return out
}

// FuzzFastDecode holds the direct decoder to sdk-go's binding: whatever it
// accepts, decodeBinding accepts too, with the same event.
func FuzzFastDecode(f *testing.F) {
	f.Add("1.0", "01J0000000000000000000000A", "hookbus.tool.before", "hookbus/loop", "2024-01-02T03:04:05.5Z",
		"", "application/json", "a", "s", "r", "1", "000000000001", "", "", `{"a":1}`, false)
	f.Add("1.0", "01J0000000000000000000000A", "hookbus.run.completed", "x:y", "2024-01-02T03:04:05+01:00",
		"t%20x", "", "a%25", "s", "r", "0", "9", "tp", "ref", ``, true)
	f.Add("1.0", "01J0000000000000000000000A", "hookbus.stop", "hookbus/loop", "2024-01-02T03:04:05Z",
		"%20t", "application/json", "a", "s", "r", "1", "1", "", "", `{}`, false)
	f.Fuzz(func(t *testing.T, spec, id, typ, src, tm, subj, ct, agent, sess, run, step, seq, tp, ref, body string, upper bool) {
		h := map[string][]string{}
		for k, v := range map[string]string{
			"ce-specversion": spec, "ce-id": id, "ce-type": typ, "ce-source": src, "ce-time": tm,
			"ce-subject": subj, "content-type": ct, "ce-agentid": agent, "ce-sessionid": sess,
			"ce-runid": run, "ce-step": step, "ce-seq": seq, "ce-traceparent": tp, "ce-dataref": ref,
		} {
			if v == "" {
				continue
			}
			if upper {
				k = strings.ToUpper(k)
			}
			h[k] = []string{v}
		}
		got := fastDecode(h, []byte(body))
		if got == nil {
			return
		}
		want, err := decodeBinding(h, []byte(body))
		if err != nil {
			t.Fatalf("fast path accepted what decodeBinding rejects (%v): %v", err, h)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("fast path decoded\n %+v\ndecodeBinding\n %+v", got, want)
		}
	})
}

func BenchmarkEncode(b *testing.B) {
	e := benchEvent(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Encode(e); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeBinding(b *testing.B) {
	e := benchEvent(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := encodeBinding(e); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	h, body, _ := Encode(benchEvent(b))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(h, body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeBinding(b *testing.B) {
	h, body, _ := Encode(benchEvent(b))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeBinding(h, body); err != nil {
			b.Fatal(err)
		}
	}
}

// benchEvent is a tool.after with 1 KiB of result.
func benchEvent(b *testing.B) *Event {
	e, err := New(StageToolAfter, Meta{Source: "hookbus/bench", AgentID: "agent", SessionID: "sess", RunID: "run1", Step: 1, Seq: 1},
		ToolAfter{Result: ToolResult{CallID: "c1", Name: "search", Content: strings.Repeat("x", 1024)}})
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// headerText writes h as "key: value" lines, keys sorted, one line per
// value: the form the fuzz targets read headers in.
func headerText(h map[string][]string) string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		for _, v := range h[k] {
			b.WriteString(k + ": " + v + "\n")
		}
	}
	return b.String()
}

// parseHeaderText reads "key: value" lines (a line without ':' is a key
// with an empty value; a repeated key adds a value).
func parseHeaderText(s string) Header {
	h := Header{}
	for _, line := range strings.Split(s, "\n") {
		if line == "" {
			continue
		}
		k, v, _ := strings.Cut(line, ":")
		h[k] = append(h[k], strings.TrimPrefix(v, " "))
	}
	return h
}

// fuzzSeedEvents are valid events in the shapes the loop writes, and a few
// it does not (foreign source, claim check, odd subject).
func fuzzSeedEvents(f *testing.F) []*Event {
	f.Helper()
	mk := func(stage Stage, meta Meta, payload any) *Event {
		e, err := New(stage, meta, payload)
		if err != nil {
			f.Fatal(err)
		}
		return e
	}
	meta := Meta{Source: "hookbus/loop", AgentID: "support", SessionID: "s1", RunID: "01J0000000000000000000000R", Step: 2, Seq: 7}
	tool := meta
	tool.Subject = "calculator"
	odd := Meta{Source: "https://example.com/x?y=1", AgentID: `a%"é`, SessionID: "s", RunID: "r", Subject: " padded ",
		Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	ref := mk(StageToolAfter, meta, ToolAfter{})
	ref.DataRef, ref.Data = "hookbus_payloads/"+ref.ID, nil
	return []*Event{
		mk(StageToolBefore, tool, ToolBefore{Call: ToolCall{ID: "c1", Name: "calculator", Arguments: json.RawMessage(`{"expression":"6*7"}`)}}),
		mk(StageStepStarted, meta, StepStarted{Step: 2}),
		mk(StageRunCompleted, odd, RunCompleted{Reason: "done", Answer: "42"}),
		ref,
	}
}

// FuzzDecodeAgreesWithBinding holds Decode (direct path and fallback) to
// sdk-go's binding on any headers and body: the same accept or reject, the
// same event, and a rejection that wraps the events sentinels.
func FuzzDecodeAgreesWithBinding(f *testing.F) {
	for _, e := range fuzzSeedEvents(f) {
		h, body, err := Encode(e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(headerText(h), body)
		f.Add(strings.ToUpper(headerText(h)), body)
		f.Add(headerText(h)+"ce-extra: x\n", body)
		f.Add(headerText(h)+"CE-ID: 01J0000000000000000000000B\n", body)
		structured, err := json.Marshal(e.CloudEvent())
		if err != nil {
			f.Fatal(err)
		}
		f.Add("content-type: application/cloudevents+json\n", structured)
	}
	f.Add("", []byte("no headers"))
	f.Add("ce-specversion: 1.0\nce-id: x\nce-type: com.example.x\nce-source: /s\n", []byte(`{}`))
	f.Fuzz(func(t *testing.T, hdr string, body []byte) {
		h := parseHeaderText(hdr)
		got, err := Decode(h, body)
		want, werr := decodeBinding(h, body)
		if (err == nil) != (werr == nil) {
			t.Fatalf("Decode: %v; decodeBinding: %v\nheaders %q", err, werr, h)
		}
		if err != nil {
			if !errors.Is(err, ErrMalformedEvent) && !errors.Is(err, ErrInvalidID) {
				t.Fatalf("error %v wraps neither ErrMalformedEvent nor ErrInvalidID", err)
			}
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode\n %+v\ndecodeBinding\n %+v\nheaders %q", got, want, h)
		}
		if err := got.Validate(); err != nil {
			t.Fatalf("decoded an invalid event: %v", err)
		}
		// What decodes encodes, and decodes again to the same.
		h2, b2, err := Encode(got)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		again, err := Decode(h2, b2)
		if err != nil || !reflect.DeepEqual(again, got) && !sameEvent(again, got) {
			t.Fatalf("round trip: %+v, %v\nwant %+v", again, err, got)
		}
	})
}

// sameEvent compares events as the wire carries them: the time as an
// instant (an encoded time is UTC).
func sameEvent(a, b *Event) bool {
	x, y := *a, *b
	if !x.Time.Equal(y.Time) {
		return false
	}
	x.Time, y.Time = time.Time{}, time.Time{}
	return reflect.DeepEqual(x, y)
}
