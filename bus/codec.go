package bus

import (
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
)

// codec is the bus' fast path for events.Encode and events.Decode: it
// writes and reads the canonical binary-mode headers directly instead of
// going through sdk-go's binding (which costs as much as the JetStream
// publish itself). It is not a second codec: anything it is not sure of
// (an invalid event, a header it does not know, a structured-mode message,
// an error of any kind) goes to events.Encode / events.Decode, which give the
// authoritative result and error. codec_test.go holds its output equal to
// events' on valid input, and FuzzDecode proves it never accepts what
// events.Decode rejects.
type codec struct {
	// sources caches, per CloudEvent source, whether it survives sdk-go's
	// URI-reference round trip unchanged (url.Parse then String).
	sources sync.Map // string -> bool
	// last is the last source found plain: a bus has few sources, most
	// often one, so this skips the map.
	last atomic.Pointer[string]
}

// plainSource reports whether src is written and read back unchanged.
func (c *codec) plainSource(src string) bool {
	if p := c.last.Load(); p != nil && *p == src {
		return true
	}
	if v, ok := c.sources.Load(src); ok {
		if v.(bool) {
			last := src // not &src: that would move src to the heap on every call
			c.last.Store(&last)
		}
		return v.(bool)
	}
	u, err := url.Parse(src)
	ok := err == nil && u.String() == src && strings.TrimSpace(src) != ""
	c.sources.Store(src, ok)
	return ok
}

// valid mirrors events.Event.Validate with the fast JSON check; false means
// "ask events".
func (c *codec) valid(e *events.Event) bool {
	if events.ValidateULID("event", e.ID) != nil || !e.Stage.Valid() || e.Source == "" || e.Time.IsZero() ||
		e.Step < 0 || e.Step > 1<<31-1 ||
		!validID(e.AgentID) || !validID(e.SessionID) || !validID(e.RunID) {
		return false
	}
	return e.DataRef != "" || validJSON(e.Data)
}

// validID is events.ValidateID(...) == nil, without decoding runes when id
// is printable ASCII.
func validID(id string) bool {
	if id == "" || len(id) > events.MaxIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c >= 0x7F || c == '.' || c == '*' || c == '>' {
			return events.ValidateID("", id) == nil
		}
	}
	return true
}

// encode returns what events.Encode returns for e, as a nats.Header.
func (c *codec) encode(e *events.Event) (nats.Header, []byte, error) {
	if !c.valid(e) || !c.plainSource(e.Source) {
		h, body, err := events.Encode(e)
		return nats.Header(h), body, err
	}
	// The map sized for exactly the headers written (a hint of 16 where 14
	// are written doubles the map's table), one backing array for the
	// values: 2 allocations, not 16.
	n := headerCount(e) + 1
	hb := headerBuilder{h: make(nats.Header, n), vals: make([]string, 0, n)}
	c.setHeaders(&hb, e)
	hb.set(events.HeaderMsgID, e.ID)
	return hb.h, eventBody(e), nil
}

// encodeRequest is encode for an interception request, without
// events.HeaderMsgID: the headers are in a pooled builder (nil on the slow
// path, when h is events.Encode's without the id) that the caller gives
// back with release once the request is sent (nats.go keeps no reference to
// a message's header after it is written), with room for the deadline
// headers.
func (c *codec) encodeRequest(e *events.Event) (*headerBuilder, nats.Header, []byte, error) {
	if !c.valid(e) || !c.plainSource(e.Source) {
		h, body, err := events.Encode(e)
		delete(h, events.HeaderMsgID)
		return nil, nats.Header(h), body, err
	}
	hb := requestHeaders.Get().(*headerBuilder)
	c.setHeaders(hb, e)
	return hb, hb.h, eventBody(e), nil
}

// requestHeaders pools the builders of encodeRequest.
var requestHeaders = sync.Pool{New: func() any {
	return &headerBuilder{h: make(nats.Header, maxRequestHeaders), vals: make([]string, 0, maxRequestHeaders)}
}}

// maxRequestHeaders is the most headers a request has: 14 CloudEvents
// headers and the 2 deadline headers.
const maxRequestHeaders = 16

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

// headerCount is the number of CloudEvents headers setHeaders writes for e.
func headerCount(e *events.Event) int {
	n := 11
	if strings.TrimSpace(e.Subject) != "" {
		n++
	}
	if e.Traceparent != "" {
		n++
	}
	if e.DataRef != "" {
		n++
	}
	return n
}

// setHeaders writes e's CloudEvents headers, as events.Encode does, for a
// valid event with a plain source.
func (c *codec) setHeaders(hb *headerBuilder, e *events.Event) {
	hb.set("ce-specversion", "1.0")
	hb.set("ce-id", e.ID)
	hb.set("ce-type", e.Stage.Type())
	hb.set("ce-source", events.PercentEncode(e.Source))
	hb.set("ce-time", e.Time.UTC().Format(time.RFC3339Nano))
	if subj := strings.TrimSpace(e.Subject); subj != "" { // sdk-go trims it
		hb.set("ce-subject", events.PercentEncode(subj))
	}
	hb.set(events.HeaderContentType, events.ContentTypeJSON)
	hb.set("ce-"+events.ExtAgentID, events.PercentEncode(e.AgentID))
	hb.set("ce-"+events.ExtSessionID, events.PercentEncode(e.SessionID))
	hb.set("ce-"+events.ExtRunID, events.PercentEncode(e.RunID))
	hb.set("ce-"+events.ExtStep, strconv.Itoa(e.Step))
	hb.set("ce-"+events.ExtSeq, e.SeqString())
	if e.Traceparent != "" {
		hb.set("ce-"+events.ExtTraceparent, events.PercentEncode(e.Traceparent))
	}
	if e.DataRef != "" {
		hb.set("ce-"+events.ExtDataRef, events.PercentEncode(e.DataRef))
	}
}

// eventBody is the body of e's message.
func eventBody(e *events.Event) []byte {
	if len(e.Data) > 0 {
		return e.Data // not copied: see Publish
	}
	return nil
}

type headerBuilder struct {
	h    nats.Header
	vals []string
}

// set adds a one-value header whose value lives in hb.vals (full slice
// expression: an append by a user of the header cannot overwrite the next).
func (hb *headerBuilder) set(k, v string) {
	n := len(hb.vals)
	hb.vals = append(hb.vals, v)
	hb.h[k] = hb.vals[n : n+1 : n+1]
}

// Header slots the fast decoder knows.
const (
	hSpec = iota
	hID
	hType
	hSource
	hTime
	hSubject
	hContentType
	hAgent
	hSession
	hRun
	hStep
	hSeq
	hTrace
	hDataRef
	nSlots
)

func slotOf(key string) int {
	switch key {
	case "ce-specversion":
		return hSpec
	case "ce-id":
		return hID
	case "ce-type":
		return hType
	case "ce-source":
		return hSource
	case "ce-time":
		return hTime
	case "ce-subject":
		return hSubject
	case "content-type":
		return hContentType
	case "ce-agentid":
		return hAgent
	case "ce-sessionid":
		return hSession
	case "ce-runid":
		return hRun
	case "ce-step":
		return hStep
	case "ce-seq":
		return hSeq
	case "ce-traceparent":
		return hTrace
	case "ce-dataref":
		return hDataRef
	}
	return -1
}

// decode returns what events.Decode returns for the message.
func (c *codec) decode(h nats.Header, body []byte) (*events.Event, error) {
	if e := c.fastDecode(h, body); e != nil {
		return e, nil
	}
	return events.Decode(events.Header(h), body)
}

// fastDecode reads a canonical binary-mode message, or returns nil.
func (c *codec) fastDecode(h nats.Header, body []byte) *events.Event {
	var v [nSlots]string
	var seen [nSlots]bool
	for k, vs := range h {
		if len(vs) == 0 {
			continue
		}
		slot := slotOf(k)
		if slot < 0 {
			ce := len(k) >= 3 && k[0]|0x20 == 'c' && k[1]|0x20 == 'e' && k[2] == '-'
			if !ce && !strings.EqualFold(k, events.HeaderContentType) {
				continue // Nats-Msg-Id and other non-CloudEvents headers
			}
			if slot = slotOf(strings.ToLower(k)); slot < 0 {
				return nil // an attribute or extension this path does not know
			}
		}
		if seen[slot] {
			return nil // the same header in two cases
		}
		seen[slot] = true
		s, err := events.PercentDecode(vs[0])
		if err != nil {
			return nil
		}
		v[slot] = s
	}
	if v[hSpec] != "1.0" || !seen[hID] || !seen[hSource] || !seen[hTime] || !seen[hAgent] ||
		!seen[hSession] || !seen[hRun] || !seen[hStep] || !seen[hSeq] ||
		(seen[hContentType] && v[hContentType] != events.ContentTypeJSON) ||
		(seen[hSubject] && (v[hSubject] == "" || strings.TrimSpace(v[hSubject]) != v[hSubject])) ||
		(seen[hTrace] && v[hTrace] == "") || (seen[hDataRef] && v[hDataRef] == "") ||
		!c.plainSource(v[hSource]) {
		return nil
	}
	stage, err := events.StageFromType(v[hType])
	if err != nil {
		return nil
	}
	t, ok := parseTimeUTC(v[hTime])
	if !ok {
		var err error
		if t, err = time.Parse(time.RFC3339Nano, v[hTime]); err != nil {
			return nil
		}
	}
	step, err := strconv.Atoi(v[hStep])
	if err != nil {
		return nil
	}
	seq, err := strconv.ParseUint(v[hSeq], 10, 64)
	if err != nil {
		return nil
	}
	e := &events.Event{
		ID: v[hID], Stage: stage, Source: v[hSource], Time: t, Subject: v[hSubject],
		AgentID: v[hAgent], SessionID: v[hSession], RunID: v[hRun], Step: step, Seq: seq,
		Traceparent: v[hTrace], DataRef: v[hDataRef],
	}
	if len(body) > 0 {
		e.Data = body // a received message's own buffer: not shared
	}
	if !c.valid(e) {
		return nil
	}
	return e
}

// parseTimeUTC parses the canonical form Encode writes,
// "2006-01-02T15:04:05[.fraction]Z", as time.Parse(time.RFC3339Nano) does,
// several times faster; false means "ask time.Parse".
func parseTimeUTC(s string) (time.Time, bool) {
	if len(s) < 20 || len(s) > 30 || s[len(s)-1] != 'Z' || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	num := func(a, b int) (int, bool) {
		n := 0
		for i := a; i < b; i++ {
			if s[i] < '0' || s[i] > '9' {
				return 0, false
			}
			n = n*10 + int(s[i]-'0')
		}
		return n, true
	}
	y, ok1 := num(0, 4)
	mo, ok2 := num(5, 7)
	d, ok3 := num(8, 10)
	h, ok4 := num(11, 13)
	mi, ok5 := num(14, 16)
	sec, ok6 := num(17, 19)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || mo < 1 || mo > 12 || d < 1 || d > daysIn(mo, y) || h > 23 || mi > 59 || sec > 59 {
		return time.Time{}, false
	}
	ns := 0
	if frac := s[19 : len(s)-1]; frac != "" {
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
			return time.Time{}, false
		}
		f, ok := num(20, len(s)-1)
		if !ok {
			return time.Time{}, false
		}
		for i := len(frac) - 1; i < 9; i++ {
			f *= 10
		}
		ns = f
	}
	return time.Date(y, time.Month(mo), d, h, mi, sec, ns, time.UTC), true
}

func daysIn(m, y int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
