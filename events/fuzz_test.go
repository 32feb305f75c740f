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

// Fuzz targets for the rest of what events decodes from the network:
// events with any headers (binary mode), structured-mode bodies, and run
// requests. FuzzDecode (codec_test.go) varies the values of a valid
// event's headers.

func seedEvent(f *testing.F) *events.Event {
	f.Helper()
	e, err := events.New(events.StageToolBefore, events.Meta{
		Source: "hookbus/loop", AgentID: "support", SessionID: "s1", RunID: "r1", Step: 1, Seq: 3, Subject: "calculator",
	}, events.ToolBefore{Call: events.ToolCall{ID: "c1", Name: "calculator", Arguments: json.RawMessage(`{"expression":"6*7"}`)}})
	if err != nil {
		f.Fatal(err)
	}
	return e
}

// headerLines writes h as "key: value" lines; parseHeaderLines reads them
// back (a repeated key adds a value).
func headerLines(h events.Header) string {
	var b strings.Builder
	for k, vs := range h {
		for _, v := range vs {
			b.WriteString(k + ": " + v + "\n")
		}
	}
	return b.String()
}

func parseHeaderLines(s string) events.Header {
	h := events.Header{}
	for _, line := range strings.Split(s, "\n") {
		if line == "" {
			continue
		}
		k, v, _ := strings.Cut(line, ":")
		h[k] = append(h[k], strings.TrimPrefix(v, " "))
	}
	return h
}

// checkDecoded holds what Decode returned to its contract: an error wraps
// ErrMalformedEvent or ErrInvalidID; an event is valid and survives an
// Encode/Decode round trip unchanged.
func checkDecoded(t *testing.T, got *events.Event, err error) {
	t.Helper()
	if err != nil {
		if !errors.Is(err, events.ErrMalformedEvent) && !errors.Is(err, events.ErrInvalidID) {
			t.Fatalf("error %v wraps neither ErrMalformedEvent nor ErrInvalidID", err)
		}
		return
	}
	if err := got.Validate(); err != nil {
		t.Fatalf("decoded event is invalid: %v", err)
	}
	h, body, err := events.Encode(got)
	if err != nil {
		t.Fatalf("re-encode: %v", err)
	}
	again, err := events.Decode(h, body)
	if err != nil {
		t.Fatalf("re-decode: %v", err)
	}
	a, b := *again, *got
	if !a.Time.Equal(b.Time) {
		t.Fatalf("round trip changed the time: %v, %v", a.Time, b.Time)
	}
	a.Time, b.Time = time.Time{}, time.Time{}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("round trip changed the event:\n %+v\n %+v", b, a)
	}
}

// FuzzDecodeHeaders decodes any set of headers: the result is as
// checkDecoded says, and the same every time (headers in two cases are
// not resolved by map order).
func FuzzDecodeHeaders(f *testing.F) {
	e := seedEvent(f)
	h, body, err := events.Encode(e)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(headerLines(h), body)
	f.Add(strings.ToUpper(headerLines(h)), body)
	f.Add(headerLines(h)+"CE-ID: 01J0000000000000000000000B\n", body)
	f.Add(headerLines(h)+"CE-ID: "+e.ID+"\n", body)
	f.Add(headerLines(h)+"ce-x: 1\nce-bad_name: 2\n", body)
	f.Add(headerLines(h)+"ce-specversion: 0.3\n", body)
	f.Add("content-type: application/cloudevents+json\n", []byte(`{"specversion":"1.0"}`))
	f.Add("", []byte("no headers"))
	f.Fuzz(func(t *testing.T, hdr string, body []byte) {
		h := parseHeaderLines(hdr)
		got, err := events.Decode(h, body)
		checkDecoded(t, got, err)
		for range 3 {
			again, err2 := events.Decode(h, body)
			if (err == nil) != (err2 == nil) || err == nil && !reflect.DeepEqual(got, again) {
				t.Fatalf("Decode is not deterministic: %+v, %v then %+v, %v\nheaders %q", got, err, again, err2, h)
			}
		}
	})
}

// TestDecodeRejectsAmbiguousHeaders: a CloudEvents header given twice in
// different cases with different values is malformed (FuzzDecodeHeaders
// found Decode taking either value, by map order); with the same value it
// is harmless.
func TestDecodeRejectsAmbiguousHeaders(t *testing.T) {
	e, err := events.New(events.StageStepStarted, events.Meta{Source: "s", AgentID: "a", SessionID: "s", RunID: "r"}, events.StepStarted{Step: 1})
	if err != nil {
		t.Fatal(err)
	}
	h, body, err := events.Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	h["CE-ID"] = []string{events.NewID()}
	for range 20 {
		if _, err := events.Decode(h, body); !errors.Is(err, events.ErrMalformedEvent) || !strings.Contains(err.Error(), "ce-id") {
			t.Fatalf("ce-id and CE-ID with two values: %v, want ErrMalformedEvent naming ce-id", err)
		}
	}
	h["CE-ID"] = []string{e.ID}
	if got, err := events.Decode(h, body); err != nil || got.ID != e.ID {
		t.Fatalf("ce-id and CE-ID with one value: %+v, %v", got, err)
	}
}

// FuzzDecodeStructured decodes any body as a structured-mode CloudEvent.
func FuzzDecodeStructured(f *testing.F) {
	e := seedEvent(f)
	b, err := json.Marshal(e.CloudEvent())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"specversion":"1.0","id":"x","type":"hookbus.stop","source":"s"}`))
	f.Add([]byte(`{"specversion":"1.0","id":"01J0000000000000000000000A","type":"hookbus.stop","source":"s","agentid":"a","sessionid":"s","runid":"r","step":"1","seq":"2","data_base64":"e30="}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := events.Decode(events.Header{"content-type": {"application/cloudevents+json"}}, body)
		checkDecoded(t, got, err)
	})
}

// FuzzDecodeRunRequest decodes any body as a run request: an error wraps
// ErrPayload or ErrInvalidID; a request is valid and survives a round
// trip.
func FuzzDecodeRunRequest(f *testing.F) {
	f.Add([]byte(`{"run_id":"01J0000000000000000000000R","agent_id":"support","session_id":"s1","prompt":"hi","metadata":{"k":"v"},"max_steps":3,"submitted_at":"2026-11-21T08:00:00Z"}`))
	f.Add([]byte(`{"run_id":"r","agent_id":"a.b","session_id":"s","prompt":"p"}`))
	f.Add([]byte(`{"run_id":"r","agent_id":"a","session_id":"s","prompt":""}`))
	f.Add([]byte(`{"run_id":"r","agent_id":"a","session_id":"s","prompt":"p","max_steps":-1}`))
	f.Add([]byte(`{"run_id":"r","agent_id":"a","session_id":"s","prompt":"p","submitted_at":"2026-11-21T08:00:00+05:30"}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"prompt":5}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := events.DecodeRunRequest(body)
		if err != nil {
			if !errors.Is(err, events.ErrPayload) && !errors.Is(err, events.ErrInvalidID) {
				t.Fatalf("error %v wraps neither ErrPayload nor ErrInvalidID", err)
			}
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("decoded an invalid request %+v: %v", r, err)
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("marshal %+v: %v", r, err)
		}
		again, err := events.DecodeRunRequest(b)
		if err != nil {
			t.Fatalf("round trip of %s: %v", b, err)
		}
		x, y := *again, *r
		if !x.SubmittedAt.Equal(y.SubmittedAt) {
			t.Fatalf("round trip changed submitted_at: %v, %v", x.SubmittedAt, y.SubmittedAt)
		}
		x.SubmittedAt, y.SubmittedAt = time.Time{}, time.Time{}
		if len(x.Metadata) == 0 && len(y.Metadata) == 0 {
			x.Metadata, y.Metadata = nil, nil // {} and absent are the same request
		}
		if !reflect.DeepEqual(x, y) {
			t.Fatalf("round trip changed the request:\n %+v\n %+v", y, x)
		}
	})
}
