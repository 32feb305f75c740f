package remote

import (
	"sync"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/nats-io/nats.go"
)

// encodeRequest encodes an interception request (events.EncodeTo: no
// Nats-Msg-Id) into a pooled header builder, which the caller gives back
// with release once the request is sent (nats.go keeps no reference to a
// message's header after it is written). The builder has room for the
// deadline headers, so adding them allocates nothing either.
func encodeRequest(e *events.Event) (*headerBuilder, nats.Header, []byte, error) {
	hb := requestHeaders.Get().(*headerBuilder)
	body, err := events.EncodeTo(hb, e)
	if err != nil {
		hb.release()
		return nil, nil, nil, err
	}
	return hb, hb.h, body, nil
}

// requestOf returns the encoded request of req.Event: the one kept in the
// run's memo (req.Memo) when no other call of the run is using it (kept),
// else a new one, kept there for the run's next calls when the run has a
// memo and none is kept yet. The caller owns hb, which holds the event's
// headers only, until it calls hb.done(kept).
func requestOf(req *interceptors.Request) (hb *headerBuilder, body []byte, kept bool, err error) {
	k, _ := req.Memo.Load(req.Event).(*headerBuilder)
	if k != nil && k.mu.TryLock() {
		if req.Memo.Load(req.Event) == k { // not given back meanwhile
			k.truncate(k.n)
			return k, k.body, true, nil
		}
		k.mu.Unlock()
	}
	hb, _, body, err = encodeRequest(req.Event)
	if err != nil || k != nil || req.Memo == nil {
		return hb, body, false, err
	}
	hb.n, hb.body = len(hb.vals), body
	hb.mu.Lock()
	req.Memo.Store(req.Event, hb, hb.giveBack)
	return hb, body, true, nil
}

// done ends a call's use of hb: the run keeps it (kept), or it goes back to
// the pool. A nil hb does nothing.
func (hb *headerBuilder) done(kept bool) {
	if kept {
		hb.mu.Unlock()
		return
	}
	hb.release()
}

// giveBack releases a builder a memo no longer keeps, unless a call still
// holds it: that one is left to the garbage collector.
func (hb *headerBuilder) giveBack() {
	if !hb.mu.TryLock() {
		return
	}
	hb.n, hb.body = 0, nil
	hb.mu.Unlock()
	hb.release()
}

// headerBuilder is a header map whose values share one backing array.
// Kept in a run's memo, it also holds the body, the number of the event's
// own values and the lock of the call using it.
type headerBuilder struct {
	h    nats.Header
	vals []string
	mu   sync.Mutex
	n    int
	body []byte
}

// SetHeader adds a one-value header whose value lives in hb.vals (full
// slice expression: an append by a user of the header cannot overwrite the
// next).
func (hb *headerBuilder) SetHeader(k, v string) {
	n := len(hb.vals)
	hb.vals = append(hb.vals, v)
	hb.h[k] = hb.vals[n : n+1 : n+1]
}

// set adds a one-value header to h: in hb's values when h is hb's (hb not
// nil), else as a slice of its own.
func (hb *headerBuilder) set(h nats.Header, k, v string) {
	if hb != nil {
		hb.SetHeader(k, v)
		return
	}
	h[k] = []string{v}
}

// requestHeaders pools the builders of encodeRequest.
var requestHeaders = sync.Pool{New: func() any {
	return &headerBuilder{h: make(nats.Header, maxRequestHeaders), vals: make([]string, 0, maxRequestHeaders)}
}}

// maxRequestHeaders is the most headers a request has: 14 CloudEvents
// headers, the 2 deadline headers and the traceparent.
const maxRequestHeaders = 17

// release empties hb and puts it back in the pool; nil does nothing.
func (hb *headerBuilder) release() {
	if hb == nil || len(hb.h) > maxRequestHeaders || cap(hb.vals) > maxRequestHeaders {
		return // grown by a caller's header: let it go
	}
	hb.reset()
	requestHeaders.Put(hb)
}

// truncate drops the headers set after the first n values: the request
// headers a call added (HeaderDeadline, HeaderTimeoutMs, HeaderTraceparent).
func (hb *headerBuilder) truncate(n int) {
	delete(hb.h, HeaderDeadline)
	delete(hb.h, HeaderTimeoutMs)
	delete(hb.h, HeaderTraceparent)
	clear(hb.vals[n:])
	hb.vals = hb.vals[:n]
}

// reset empties hb, keeping no reference to an event's strings.
func (hb *headerBuilder) reset() {
	clear(hb.h)
	clear(hb.vals[:cap(hb.vals)])
	hb.vals = hb.vals[:0]
}
