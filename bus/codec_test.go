package bus

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
)

func codecEvents(t *testing.T) []*events.Event {
	t.Helper()
	base := func(mod func(*events.Event)) *events.Event {
		e, err := events.New(events.StageToolBefore, events.Meta{
			Source: "hookbus/loop", AgentID: "support", SessionID: "s1", RunID: "r1", Step: 2, Seq: 7,
		}, events.ToolBefore{Call: events.ToolCall{ID: "c1", Name: "search", Arguments: json.RawMessage(`{"q":"x"}`)}})
		if err != nil {
			t.Fatal(err)
		}
		if mod != nil {
			mod(e)
		}
		return e
	}
	return []*events.Event{
		base(nil),
		base(func(e *events.Event) { e.AgentID, e.SessionID, e.RunID = `a%"é`, "sé", "r~!@#" }),
		base(func(e *events.Event) {
			e.Subject, e.Traceparent = "my tool", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		}),
		base(func(e *events.Event) { e.Time = time.Date(2024, 1, 2, 3, 4, 5, 600, time.FixedZone("x", 3600)) }),
		base(func(e *events.Event) { e.Time = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC) }),
		base(func(e *events.Event) { e.Step, e.Seq = 0, 1<<63 }),
		base(func(e *events.Event) { e.Step = 1<<31 - 1 }),
		base(func(e *events.Event) { e.DataRef, e.Data = "hookbus_payloads/01J", nil }),
		base(func(e *events.Event) { e.DataRef, e.Data = "obj://x y", json.RawMessage(`not json`) }),
		base(func(e *events.Event) { e.Source = "https://example.com/agents?x=1#f" }),
		base(func(e *events.Event) { e.Source = "has space" }),               // url round trip changes it
		base(func(e *events.Event) { e.Source = "HTTP://Example.com/%7Ex" }), // idem
		base(func(e *events.Event) {
			e.Stage, e.Data = events.StageRunCompleted, json.RawMessage(`{"reason":"done"}`)
		}),
		base(func(e *events.Event) { e.Data = json.RawMessage(" [1, {\"a\": \"\\u00e9\"}] ") }),
		base(func(e *events.Event) { e.Subject = " " }),
		base(func(e *events.Event) { e.Subject = " padded tool\t" }),
	}
}

func badEvents(t *testing.T) []*events.Event {
	t.Helper()
	mods := []func(*events.Event){
		func(e *events.Event) { e.ID = "nope" },
		func(e *events.Event) { e.Stage = "tool.sideways" },
		func(e *events.Event) { e.Source = "" },
		func(e *events.Event) { e.Time = time.Time{} },
		func(e *events.Event) { e.AgentID = "a.b" },
		func(e *events.Event) { e.SessionID = "" },
		func(e *events.Event) { e.RunID = "r*" },
		func(e *events.Event) { e.Step = -1 },
		func(e *events.Event) { e.Data = json.RawMessage(`{"a":`) },
		func(e *events.Event) { e.Data = nil },
	}
	var out []*events.Event
	for _, m := range mods {
		e := codecEvents(t)[0]
		m(e)
		out = append(out, e)
	}
	return out
}

func TestCodecEncodeEqualsEvents(t *testing.T) {
	var c codec
	for i, e := range codecEvents(t) {
		h, body, err := c.encode(e)
		wh, wbody, werr := events.Encode(e)
		if err != nil || werr != nil {
			t.Fatalf("#%d: encode err %v, events err %v", i, err, werr)
		}
		if !reflect.DeepEqual(map[string][]string(h), wh) {
			t.Errorf("#%d: headers differ\n got %v\nwant %v", i, h, wh)
		}
		if string(body) != string(wbody) {
			t.Errorf("#%d: body %q, want %q", i, body, wbody)
		}
	}
}

// encodeRequest is encode without the message id, in a pooled builder
// that comes back empty.
func TestCodecEncodeRequestEqualsEvents(t *testing.T) {
	var c codec
	for i, e := range append(codecEvents(t), badEvents(t)...) {
		hb, h, body, err := c.encodeRequest(e)
		wh, wbody, werr := events.Encode(e)
		if (err == nil) != (werr == nil) {
			t.Fatalf("#%d: encodeRequest err %v, events err %v", i, err, werr)
		}
		if err != nil {
			hb.release()
			continue
		}
		delete(wh, events.HeaderMsgID)
		if !reflect.DeepEqual(map[string][]string(h), wh) {
			t.Errorf("#%d: headers differ\n got %v\nwant %v", i, h, wh)
		}
		if string(body) != string(wbody) {
			t.Errorf("#%d: body %q, want %q", i, body, wbody)
		}
		if hb != nil {
			hb.reset() // what release does before giving it back
			if len(hb.h) != 0 || len(hb.vals) != 0 || slices.ContainsFunc(hb.vals[:cap(hb.vals)], func(v string) bool { return v != "" }) {
				t.Fatalf("#%d: reset builder holds %v %q", i, hb.h, hb.vals[:cap(hb.vals)])
			}
			hb.release()
		}
	}
}

func TestCodecEncodeRejectsLikeEvents(t *testing.T) {
	var c codec
	for i, e := range badEvents(t) {
		_, _, err := c.encode(e)
		_, _, werr := events.Encode(e)
		if err == nil || werr == nil || err.Error() != werr.Error() {
			t.Errorf("#%d: encode err %v, events err %v", i, err, werr)
		}
	}
}

func TestCodecDecodeEqualsEvents(t *testing.T) {
	var c codec
	fast := 0
	for i, e := range codecEvents(t) {
		h, body, err := events.Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		variants := []map[string][]string{h, upperKeys(h)}
		for j, h := range variants {
			got, err := c.decode(nats.Header(h), body)
			want, werr := events.Decode(h, body)
			if (err == nil) != (werr == nil) || !reflect.DeepEqual(got, want) {
				t.Errorf("#%d.%d: decode %+v, %v\nevents %+v, %v", i, j, got, err, want, werr)
			}
			if c.fastDecode(nats.Header(h), body) != nil {
				fast++
			}
		}
	}
	if fast < len(codecEvents(t)) {
		t.Errorf("fast path taken %d times, want most of %d", fast, 2*len(codecEvents(t)))
	}
}

func TestCodecDecodeRejectsLikeEvents(t *testing.T) {
	var c codec
	e := codecEvents(t)[0]
	h, body, _ := events.Encode(e)
	cases := map[string]func(h map[string][]string) []byte{
		"no specversion": func(h map[string][]string) []byte { delete(h, "ce-specversion"); return body },
		"spec 0.3":       func(h map[string][]string) []byte { h["ce-specversion"] = []string{"0.3"}; return body },
		"bad type":       func(h map[string][]string) []byte { h["ce-type"] = []string{"other.x"}; return body },
		"no runid":       func(h map[string][]string) []byte { delete(h, "ce-runid"); return body },
		"bad step":       func(h map[string][]string) []byte { h["ce-step"] = []string{"1.5"}; return body },
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
		_, err := c.decode(nats.Header(hh), b)
		_, werr := events.Decode(hh, b)
		if err == nil || werr == nil || !errors.Is(err, events.ErrMalformedEvent) && !errors.Is(err, events.ErrInvalidID) {
			t.Errorf("%s: decode err %v, events err %v", name, err, werr)
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

// FuzzDecode holds the fast decoder to events.Decode: whatever it accepts,
// events.Decode accepts too, with the same event.
func FuzzDecode(f *testing.F) {
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
		var c codec
		got := c.fastDecode(nats.Header(h), []byte(body))
		if got == nil {
			return
		}
		want, err := events.Decode(h, []byte(body))
		if err != nil {
			t.Fatalf("fast path accepted what events.Decode rejects (%v): %v", err, h)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("fast path decoded\n %+v\nevents.Decode\n %+v", got, want)
		}
	})
}

func BenchmarkCodecEncode(b *testing.B) {
	e, _ := events.New(events.StageToolAfter, events.Meta{Source: "hookbus/bench", AgentID: "agent", SessionID: "sess", RunID: "run1", Step: 1, Seq: 1},
		events.ToolAfter{Result: events.ToolResult{CallID: "c1", Name: "search", Content: strings.Repeat("x", 1024)}})
	var c codec
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.encode(e); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCodecDecode(b *testing.B) {
	e, _ := events.New(events.StageToolAfter, events.Meta{Source: "hookbus/bench", AgentID: "agent", SessionID: "sess", RunID: "run1", Step: 1, Seq: 1},
		events.ToolAfter{Result: events.ToolResult{CallID: "c1", Name: "search", Content: strings.Repeat("x", 1024)}})
	h, body, _ := events.Encode(e)
	var c codec
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.decode(nats.Header(h), body); err != nil {
			b.Fatal(err)
		}
	}
}

func TestParseTimeUTCMatchesTimeParse(t *testing.T) {
	for _, s := range []string{
		"2024-01-02T03:04:05Z", "2024-01-02T03:04:05.5Z", "2024-01-02T03:04:05.000000001Z",
		"2024-02-29T23:59:59.123456789Z", "2023-02-29T00:00:00Z", "2024-13-01T00:00:00Z",
		"2024-01-02T24:00:00Z", "2024-01-02T03:04:60Z", "2024-01-02T03:04:05.Z", "2024-01-02T03:04:05.1234567890Z",
		"2024-01-02T03:04:05+01:00", "2024-01-02 03:04:05Z", "0000-01-01T00:00:00Z", "2024-04-31T00:00:00Z",
		"1900-02-29T00:00:00Z", "2000-02-29T00:00:00Z", "2024-01-02T03:04:05,5Z", "2024-1-02T03:04:05Z",
	} {
		want, werr := time.Parse(time.RFC3339Nano, s)
		got, ok := parseTimeUTC(s)
		if ok && (werr != nil || !reflect.DeepEqual(got, want)) {
			t.Errorf("parseTimeUTC(%q) = %v, time.Parse = %v, %v", s, got, want, werr)
		}
		if !ok && werr == nil && strings.HasSuffix(s, "Z") && !strings.Contains(s, ",") {
			t.Logf("parseTimeUTC(%q) defers to time.Parse", s)
		}
	}
}

func FuzzParseTimeUTC(f *testing.F) {
	f.Add("2024-01-02T03:04:05.123Z")
	f.Add("2024-02-29T23:59:59Z")
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseTimeUTC(s)
		if !ok {
			return
		}
		want, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("parseTimeUTC(%q) = %v, time.Parse = %v, %v", s, got, want, err)
		}
	})
}

func TestValidIDMatchesEvents(t *testing.T) {
	for _, id := range []string{"", "a", "agent-1", "a.b", "a*", "a>", "a b", "a\tb", "é", "a\u00a0b", "a\u0085", "\x7f", "\xff", "a\ufffd", "~!@#$%^&()_+=[]{}|;:'\",<?/`", strings.Repeat("x", events.MaxIDLen), strings.Repeat("x", events.MaxIDLen+1)} {
		if got, want := validID(id), events.ValidateID("x", id) == nil; got != want {
			t.Errorf("validID(%q) = %v, ValidateID says %v", id, got, want)
		}
	}
}

func FuzzValidID(f *testing.F) {
	f.Add("agent-1")
	f.Add("a.b")
	f.Add("a\u00a0b")
	f.Fuzz(func(t *testing.T, id string) {
		if got, want := validID(id), events.ValidateID("x", id) == nil; got != want {
			t.Fatalf("validID(%q) = %v, ValidateID says %v", id, got, want)
		}
	})
}
