package events_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
)

func mustEvent(t testing.TB, stage events.Stage, payload any) *events.Event {
	t.Helper()
	e, err := events.New(stage, events.Meta{
		Source: "hookbus/test", AgentID: "agent-1", SessionID: "sess-1", RunID: events.NewID(),
		Step: 2, Seq: 7, Subject: "calculator", Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	}, payload)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	in := mustEvent(t, events.StageToolBefore, events.ToolBefore{Call: events.ToolCall{
		ID: "call_1", Name: "calculator", Arguments: json.RawMessage(`{"expr":"1 + 2 \"%\" é"}`),
	}})
	in.Subject = "tool with spaces \"and\" 100% é"
	h, body, err := events.Encode(in)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	for k, want := range map[string]string{
		"ce-id": in.ID, "ce-type": "hookbus.tool.before", "ce-specversion": "1.0", "ce-source": "hookbus/test",
		"ce-agentid": "agent-1", "ce-sessionid": "sess-1", "ce-seq": "000000000007", "ce-step": "2",
		"content-type": "application/json", "Nats-Msg-Id": in.ID,
		"ce-subject": "tool%20with%20spaces%20%22and%22%20100%25%20%C3%A9",
	} {
		if got := h[k]; len(got) != 1 || got[0] != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	out, err := events.Decode(h, body)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if out.ID != in.ID || out.Stage != in.Stage || out.Subject != in.Subject || out.AgentID != in.AgentID ||
		out.SessionID != in.SessionID || out.RunID != in.RunID || out.Step != in.Step || out.Seq != in.Seq ||
		out.Traceparent != in.Traceparent || !out.Time.Equal(in.Time) || string(out.Data) != string(in.Data) {
		t.Fatalf("round trip changed the event:\n in=%+v\nout=%+v", in, out)
	}
	var p events.ToolBefore
	if err := out.DecodeData(&p); err != nil || p.Call.Name != "calculator" {
		t.Fatalf("DecodeData = %+v, %v", p, err)
	}
}

func TestDecodeIgnoresHeaderCase(t *testing.T) {
	in := mustEvent(t, events.StageStepStarted, events.StepStarted{Step: 2})
	h, body, err := events.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	upper := events.Header{}
	for k, v := range h {
		upper[strings.ToUpper(k)] = v
	}
	out, err := events.Decode(upper, body)
	if err != nil {
		t.Fatalf("Decode upper-case headers: %v", err)
	}
	if out.ID != in.ID || out.Stage != events.StageStepStarted {
		t.Fatalf("got %+v", out)
	}
}

func TestDecodeStructuredMode(t *testing.T) {
	in := mustEvent(t, events.StageStepStarted, events.StepStarted{Step: 2})
	ce := in.CloudEvent()
	body, err := json.Marshal(ce)
	if err != nil {
		t.Fatal(err)
	}
	out, err := events.Decode(events.Header{"Content-Type": {"application/cloudevents+json"}}, body)
	if err != nil {
		t.Fatalf("Decode structured: %v", err)
	}
	if out.ID != in.ID || out.Seq != 7 || string(out.Data) != string(in.Data) {
		t.Fatalf("got %+v", out)
	}
}

func TestDecodeRejectsMalformed(t *testing.T) {
	good := mustEvent(t, events.StageStepStarted, events.StepStarted{Step: 2})
	gh, gbody, err := events.Encode(good)
	if err != nil {
		t.Fatal(err)
	}
	with := func(k, v string) events.Header {
		h := events.Header{}
		for kk, vv := range gh {
			h[kk] = vv
		}
		if v == "" {
			delete(h, k)
		} else {
			h[k] = []string{v}
		}
		return h
	}
	cases := []struct {
		name string
		h    events.Header
		body []byte
		want string
	}{
		{"no headers", nil, []byte("hello"), "no ce-specversion"},
		{"bad specversion", with("ce-specversion", "0.1"), gbody, "specversion"},
		{"missing id", with("ce-id", ""), gbody, "id"},
		{"id not ULID", with("ce-id", "not-a-ulid"), gbody, "ULID"},
		{"foreign type", with("ce-type", "com.example.thing"), gbody, "type"},
		{"unknown stage", with("ce-type", "hookbus.tool.sideways"), gbody, "unknown stage"},
		{"missing agent", with("ce-agentid", ""), gbody, "agentid"},
		{"agent with dot", with("ce-agentid", "a.b"), gbody, "agent id"},
		{"seq not a number", with("ce-seq", "seven"), gbody, "seq"},
		{"step not a number", with("ce-step", "two"), gbody, "step"},
		{"bad time", with("ce-time", "yesterday"), gbody, "time"},
		{"bad percent escape", with("ce-source", "a%zz"), gbody, "percent"},
		{"data not JSON", gh, []byte("{not json"), "JSON"},
		{"wrong content type", with("content-type", "text/plain"), gbody, "datacontenttype"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := events.Decode(tc.h, tc.body)
			if err == nil {
				t.Fatal("Decode accepted a malformed message")
			}
			if !errors.Is(err, events.ErrMalformedEvent) && !errors.Is(err, events.ErrInvalidID) {
				t.Fatalf("error %v does not wrap ErrMalformedEvent or ErrInvalidID", err)
			}
			if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.want)) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	base := events.Meta{Source: "s", AgentID: "a", SessionID: "s", RunID: "r"}
	cases := []struct {
		name  string
		stage events.Stage
		meta  func(events.Meta) events.Meta
		pay   any
		want  error
	}{
		{"unknown stage", "tool.sideways", func(m events.Meta) events.Meta { return m }, 1, events.ErrMalformedEvent},
		{"no source", events.StageStop, func(m events.Meta) events.Meta { m.Source = ""; return m }, 1, events.ErrMalformedEvent},
		{"bad agent", events.StageStop, func(m events.Meta) events.Meta { m.AgentID = "a*"; return m }, 1, events.ErrInvalidID},
		{"bad session", events.StageStop, func(m events.Meta) events.Meta { m.SessionID = "x y"; return m }, 1, events.ErrInvalidID},
		{"bad id", events.StageStop, func(m events.Meta) events.Meta { m.ID = "nope"; return m }, 1, events.ErrMalformedEvent},
		{"payload does not marshal", events.StageStop, func(m events.Meta) events.Meta { return m }, make(chan int), events.ErrPayload},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := events.New(tc.stage, tc.meta(base), tc.pay)
			if !errors.Is(err, tc.want) {
				t.Fatalf("New error = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestFormatSeqOrdersAsStrings(t *testing.T) {
	prev := ""
	for _, n := range []uint64{0, 1, 9, 10, 99, 100, 12345, 999999999999} {
		s := events.FormatSeq(n)
		if len(s) != events.SeqWidth {
			t.Fatalf("FormatSeq(%d) = %q, want width %d", n, s, events.SeqWidth)
		}
		if s <= prev {
			t.Fatalf("FormatSeq(%d) = %q does not sort after %q", n, s, prev)
		}
		prev = s
	}
}

func TestEventTimeIsUTCAndNanos(t *testing.T) {
	e := mustEvent(t, events.StageStop, events.Stop{Reason: "done"})
	e.Time = time.Date(2026, 11, 21, 8, 0, 0, 123456789, time.UTC)
	h, body, err := events.Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	out, err := events.Decode(h, body)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Time.Equal(e.Time) {
		t.Fatalf("time %v, want %v", out.Time, e.Time)
	}
}

func FuzzDecode(f *testing.F) {
	e, err := events.New(events.StageToolBefore, events.Meta{Source: "s", AgentID: "a", SessionID: "s", RunID: "r"},
		events.ToolBefore{Call: events.ToolCall{ID: "1", Name: "clock"}})
	if err != nil {
		f.Fatal(err)
	}
	h, body, err := events.Encode(e)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(h["ce-id"][0], h["ce-type"][0], h["ce-seq"][0], h["ce-agentid"][0], h["ce-time"][0], body)
	f.Add("", "", "", "", "", []byte(nil))
	f.Add("x", "hookbus.stop", "-1", "a.b", "now", []byte("{"))
	f.Fuzz(func(t *testing.T, id, typ, seq, agent, tm string, body []byte) {
		hh := events.Header{}
		for k, v := range h {
			hh[k] = v
		}
		hh["ce-id"] = []string{id}
		hh["ce-type"] = []string{typ}
		hh["ce-seq"] = []string{seq}
		hh["ce-agentid"] = []string{agent}
		hh["ce-time"] = []string{tm}
		got, err := events.Decode(hh, body)
		if err != nil {
			if !errors.Is(err, events.ErrMalformedEvent) && !errors.Is(err, events.ErrInvalidID) {
				t.Fatalf("error %v wraps neither ErrMalformedEvent nor ErrInvalidID", err)
			}
			return
		}
		// Whatever decodes must be valid and survive a second round trip.
		if err := got.Validate(); err != nil {
			t.Fatalf("decoded event is invalid: %v", err)
		}
		h2, b2, err := events.Encode(got)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		again, err := events.Decode(h2, b2)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if again.ID != got.ID || again.Seq != got.Seq || again.AgentID != got.AgentID || string(again.Data) != string(got.Data) {
			t.Fatalf("second round trip changed the event: %+v vs %+v", got, again)
		}
	})
}

// The chain hash covers every attribute but the signature, and the data.
func TestChainHashCoversTheEvent(t *testing.T) {
	e, err := events.New(events.StageToolAfter, events.Meta{Source: "hookbus/loop", AgentID: "a", SessionID: "s", RunID: "r", Step: 1, Seq: 7},
		events.ToolAfter{Result: events.ToolResult{Content: "42"}})
	if err != nil {
		t.Fatal(err)
	}
	h := e.ChainHash()
	if len(h) != 64 || h != e.ChainHash() {
		t.Fatalf("hash %q", h)
	}
	for name, change := range map[string]func(*events.Event){
		"data":     func(e *events.Event) { e.Data = []byte(`{"result":{"content":"41"}}`) },
		"seq":      func(e *events.Event) { e.Seq = 8 },
		"step":     func(e *events.Event) { e.Step = 2 },
		"run":      func(e *events.Event) { e.RunID = "r2" },
		"prevhash": func(e *events.Event) { e.PrevHash = "00" },
		"signer":   func(e *events.Event) { e.Signer = "UX" },
		"time":     func(e *events.Event) { e.Time = e.Time.Add(time.Nanosecond) },
		"subject":  func(e *events.Event) { e.Subject = "calculator" },
		"parent":   func(e *events.Event) { e.ParentRunID = "p" },
	} {
		c := e.Clone()
		change(c)
		if c.ChainHash() == h {
			t.Errorf("changing the %s left the hash as it was", name)
		}
	}
	c := e.Clone()
	c.Signature = "anything"
	if c.ChainHash() != h {
		t.Error("the signature changed the hash")
	}
	// A value holding a newline cannot fake another line.
	a, b := e.Clone(), e.Clone()
	a.Subject, b.Subject = "x\ny", "x%0Ay"
	if a.ChainHash() == b.ChainHash() {
		t.Error("two subjects hash the same")
	}
}

// EncodeHeader writes Encode's headers into a header of the caller's, a
// new one or one cleared after an earlier use.
func TestEncodeHeaderWritesEncodesHeaders(t *testing.T) {
	h := events.Header{}
	for _, src := range []string{"hookbus/loop", "https://example.com/a b"} { // the direct codec, then the binding
		e, err := events.New(events.StageToolBefore, events.Meta{Source: src, AgentID: "a", SessionID: "s", RunID: "r", Step: 1, Seq: 3, Subject: "calculator",
			Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}, events.ToolBefore{Call: events.ToolCall{ID: "c1", Name: "calculator"}})
		if err != nil {
			t.Fatal(err)
		}
		e.PrevHash = "abc"
		want, wbody, err := events.Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		clear(h)
		body, err := events.EncodeHeader(h, e)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(h, want) || string(body) != string(wbody) {
			t.Fatalf("source %q: EncodeHeader = %v %s, want %v %s", src, h, body, want, wbody)
		}
	}
	bad := &events.Event{ID: "nope"}
	clear(h)
	if _, err := events.EncodeHeader(h, bad); !errors.Is(err, events.ErrMalformedEvent) || len(h) != 0 {
		t.Fatalf("an invalid event: %v, header %v", err, h)
	}
}
