package remote

import (
	"sync"

	"github.com/hookbus/hookbus/events"
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

// headerBuilder is a header map whose values share one backing array.
type headerBuilder struct {
	h    nats.Header
	vals []string
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

// reset empties hb, keeping no reference to an event's strings.
func (hb *headerBuilder) reset() {
	clear(hb.h)
	clear(hb.vals[:cap(hb.vals)])
	hb.vals = hb.vals[:0]
}
