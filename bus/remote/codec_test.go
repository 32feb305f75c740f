package remote

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// requestEvents are events for encodeRequest: direct and sdk-go paths of
// events.EncodeTo, and two it refuses.
func requestEvents(t *testing.T) []*events.Event {
	t.Helper()
	mk := func(mod func(*events.Event)) *events.Event {
		e, err := events.New(events.StageToolBefore, events.Meta{
			Source: "hookbus/loop", AgentID: "support", SessionID: "s1", RunID: "r1", Step: 2, Seq: 7, Subject: "search",
		}, events.ToolBefore{Call: events.ToolCall{ID: "c1", Name: "search", Arguments: json.RawMessage(`{"q":"x"}`)}})
		if err != nil {
			t.Fatal(err)
		}
		mod(e)
		return e
	}
	return []*events.Event{
		mk(func(*events.Event) {}),
		mk(func(e *events.Event) {
			e.AgentID, e.Traceparent = `a%"é`, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		}),
		mk(func(e *events.Event) { e.Source = "https://example.com/agents?x=1#f" }),
		mk(func(e *events.Event) { e.Source = "has space" }), // sdk-go's path
		mk(func(e *events.Event) { e.DataRef, e.Data = "hookbus_payloads/01J", nil }),
		mk(func(e *events.Event) { e.RunID = "r*" }),
		mk(func(e *events.Event) { e.Data = json.RawMessage(`{"a":`) }),
	}
}

// encodeRequest is events.Encode without the message id, in a pooled
// builder that comes back empty.
func TestEncodeRequestEqualsEncode(t *testing.T) {
	for i, e := range requestEvents(t) {
		hb, h, body, err := encodeRequest(e)
		wh, wbody, werr := events.Encode(e)
		if (err == nil) != (werr == nil) {
			t.Fatalf("#%d: encodeRequest err %v, events err %v", i, err, werr)
		}
		if err != nil {
			if hb != nil {
				t.Fatalf("#%d: a failed encodeRequest kept its builder", i)
			}
			continue
		}
		delete(wh, events.HeaderMsgID)
		if !reflect.DeepEqual(map[string][]string(h), wh) {
			t.Errorf("#%d: headers differ\n got %v\nwant %v", i, h, wh)
		}
		if string(body) != string(wbody) {
			t.Errorf("#%d: body %q, want %q", i, body, wbody)
		}
		hb.reset() // what release does before giving it back
		if len(hb.h) != 0 || len(hb.vals) != 0 || slices.ContainsFunc(hb.vals[:cap(hb.vals)], func(v string) bool { return v != "" }) {
			t.Fatalf("#%d: reset builder holds %v %q", i, hb.h, hb.vals[:cap(hb.vals)])
		}
		hb.release()
	}
}

func BenchmarkEncodeRequest(b *testing.B) {
	e, _ := events.New(events.StageToolBefore, events.Meta{Source: "hookbus/bench", AgentID: "agent", SessionID: "sess", RunID: "run1", Step: 1, Seq: 1},
		events.ToolBefore{Call: events.ToolCall{ID: "c1", Name: "search", Arguments: json.RawMessage(`{"q":"x"}`)}})
	b.ReportAllocs()
	for b.Loop() {
		hb, _, _, err := encodeRequest(e)
		if err != nil {
			b.Fatal(err)
		}
		hb.release()
	}
}

// The calls of one run share one encoding of the run's event, one call at
// a time: the next gets the event's headers only, without the headers the
// last call added; a call while another holds it, and a call on another
// event (a payload an interceptor changed), get their own.
func TestRequestOfSharesOneEncoding(t *testing.T) {
	evs := requestEvents(t)
	ev, changed := evs[0], evs[1]
	wh, wbody, err := events.Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	delete(wh, events.HeaderMsgID)
	memo := new(interceptors.Memo)
	req := &interceptors.Request{Stage: ev.Stage, Event: ev, Memo: memo}

	first, body, kept, err := requestOf(req)
	if err != nil || !reflect.DeepEqual(map[string][]string(first.h), wh) || string(body) != string(wbody) {
		t.Fatalf("first call: %v %q, %v", first.h, body, err)
	}
	first.set(first.h, HeaderDeadline, "d")
	first.set(first.h, HeaderTimeoutMs, "1")
	first.set(first.h, HeaderTraceparent, "tp")
	during, _, keptDuring, err := requestOf(req)
	if err != nil || during == first || !reflect.DeepEqual(map[string][]string(during.h), wh) {
		t.Fatalf("call while the first holds the encoding: %v (the first's: %v), %v", during.h, during == first, err)
	}
	during.done(keptDuring)
	first.done(kept)

	next, body, kept, err := requestOf(req)
	if err != nil || next != first || !reflect.DeepEqual(map[string][]string(next.h), wh) || string(body) != string(wbody) {
		t.Fatalf("next call: %v %q (the run's encoding: %v), %v", next.h, body, next == first, err)
	}
	next.done(kept)

	cw, cbody, err := events.Encode(changed)
	if err != nil {
		t.Fatal(err)
	}
	delete(cw, events.HeaderMsgID)
	other, body, kept, err := requestOf(&interceptors.Request{Stage: changed.Stage, Event: changed, Memo: memo})
	if err != nil || other == first || !reflect.DeepEqual(map[string][]string(other.h), cw) || string(body) != string(cbody) {
		t.Fatalf("call on a changed event: %v %q, %v", other.h, body, err)
	}
	if first.n != 0 || len(first.h) != 0 {
		t.Fatalf("the run's first encoding, replaced, was not given back: %v", first.h)
	}
	other.done(kept)
}
