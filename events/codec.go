package events

import (
	"maps"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Header names of the CloudEvents NATS binding (binary content mode) that
// hookbus writes. Reads ignore case.
const (
	HeaderPrefix      = "ce-"
	HeaderContentType = "content-type"
	// HeaderMsgID is JetStream's de-duplication header; Encode sets it to
	// the event id so a retried publish is stored once.
	HeaderMsgID = "Nats-Msg-Id"
)

// Header is a NATS message header. It has nats.Header's underlying type, so
// the two convert to each other without copying.
type Header = map[string][]string

// Encode writes e in CloudEvents binary content mode: attributes and
// extensions as percent-encoded ce-* headers, content-type, Nats-Msg-Id = id,
// and the JSON data as the body (e.Data itself, not a copy). It validates e
// first; the error is Validate's.
//
// The headers are written directly (about 1 µs, 2 allocations); an event
// whose source a URI round trip would change goes through sdk-go's binding,
// which gives the same headers for every other event (the tests hold the
// two byte-identical).
func Encode(e *Event) (Header, []byte, error) {
	if err := e.Validate(); err != nil {
		return nil, nil, err
	}
	if !plainSource(e.Source) {
		return encodeBinding(e)
	}
	var v headerValues
	n := v.fill(e) + 1
	// The map sized for exactly the headers written (a larger hint may
	// double its table), one backing array for the values: 2 allocations,
	// not 16.
	h := make(Header, n)
	v.write(h, e.ID, n)
	return h, eventBody(e), nil
}

// EncodeHeader is Encode into h, an empty header the caller owns (one it
// cleared to use again, say): it sets the headers Encode writes, Nats-Msg-Id
// among them, and returns the body.
func EncodeHeader(h Header, e *Event) ([]byte, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	if !plainSource(e.Source) {
		bh, body, err := encodeBinding(e)
		if err != nil {
			return nil, err
		}
		maps.Copy(h, bh)
		return body, nil
	}
	var v headerValues
	v.write(h, e.ID, v.fill(e)+1)
	return eventBody(e), nil
}

// write sets the n-1 headers of v and Nats-Msg-Id = id in h, their values
// in one backing array.
func (v *headerValues) write(h Header, id string, n int) {
	vals := make([]string, 0, n)
	for i, s := range v {
		if s != "" {
			vals = append(vals, s)
			h[slotKeys[i]] = vals[len(vals)-1 : len(vals) : len(vals)]
		}
	}
	vals = append(vals, id)
	h[HeaderMsgID] = vals[len(vals)-1 : len(vals) : len(vals)]
}

// HeaderSetter receives the headers EncodeTo writes, one value each.
type HeaderSetter interface {
	SetHeader(key, value string)
}

// EncodeTo is Encode into headers the caller owns (a pooled request header,
// say): it validates e, gives w the CloudEvents headers Encode writes (not
// HeaderMsgID, which only a stored message needs) and returns the body.
func EncodeTo(w HeaderSetter, e *Event) ([]byte, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	if !plainSource(e.Source) {
		h, body, err := encodeBinding(e)
		if err != nil {
			return nil, err
		}
		for k, vs := range h {
			if k != HeaderMsgID {
				w.SetHeader(k, vs[0])
			}
		}
		return body, nil
	}
	var v headerValues
	v.fill(e)
	for i, s := range v {
		if s != "" {
			w.SetHeader(slotKeys[i], s)
		}
	}
	return eventBody(e), nil
}

// Decode reads a hookbus event from a NATS message's header and body. Binary
// content mode is expected (ce-* headers, read without regard to case);
// structured mode (content-type application/cloudevents+json) is accepted
// too. A message that is not a valid hookbus event gives an error wrapping
// ErrMalformedEvent (or ErrInvalidID) that says what is wrong.
//
// A canonical binary-mode message is read directly (about 1 µs); anything
// else (another case, an unknown extension, structured mode, any error)
// goes through sdk-go's binding, which gives the authoritative result and
// error. The fuzz targets hold the two to the same answer on any input.
func Decode(h Header, body []byte) (*Event, error) {
	if e := fastDecode(h, body); e != nil {
		return e, nil
	}
	return decodeBinding(h, body)
}

// The headers of the canonical binary mode, one slot each.
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
	hParentAgent
	hParentSession
	hParentRun
	hPrevHash
	hSigner
	hSignature
	nSlots
)

// slotKeys are the header names of the slots, as Encode writes them. It is
// never written.
var slotKeys = [nSlots]string{
	hSpec: "ce-specversion", hID: "ce-id", hType: "ce-type", hSource: "ce-source", hTime: "ce-time",
	hSubject: "ce-subject", hContentType: HeaderContentType, hAgent: HeaderPrefix + ExtAgentID,
	hSession: HeaderPrefix + ExtSessionID, hRun: HeaderPrefix + ExtRunID, hStep: HeaderPrefix + ExtStep,
	hSeq: HeaderPrefix + ExtSeq, hTrace: HeaderPrefix + ExtTraceparent, hDataRef: HeaderPrefix + ExtDataRef,
	hParentAgent: HeaderPrefix + ExtParentAgentID, hParentSession: HeaderPrefix + ExtParentSessionID,
	hParentRun: HeaderPrefix + ExtParentRunID,
	hPrevHash:  HeaderPrefix + ExtPrevHash, hSigner: HeaderPrefix + ExtSigner, hSignature: HeaderPrefix + ExtSignature,
}

// headerValues are the encoded header values of an event by slot; "" is a
// header not written.
type headerValues [nSlots]string

// fill sets the values of a valid event with a plain source, as sdk-go's
// binding writes them, and returns how many it set.
func (v *headerValues) fill(e *Event) int {
	*v = headerValues{
		hSpec:          "1.0",
		hID:            e.ID,
		hType:          e.Stage.Type(),
		hSource:        PercentEncode(e.Source),
		hTime:          e.Time.UTC().Format(time.RFC3339Nano),
		hSubject:       PercentEncode(strings.TrimSpace(e.Subject)), // sdk-go trims it
		hContentType:   ContentTypeJSON,
		hAgent:         PercentEncode(e.AgentID),
		hSession:       PercentEncode(e.SessionID),
		hRun:           PercentEncode(e.RunID),
		hStep:          strconv.Itoa(e.Step),
		hSeq:           e.SeqString(),
		hTrace:         PercentEncode(e.Traceparent),
		hDataRef:       PercentEncode(e.DataRef),
		hParentAgent:   PercentEncode(e.ParentAgentID),
		hParentSession: PercentEncode(e.ParentSessionID),
		hParentRun:     PercentEncode(e.ParentRunID),
		hPrevHash:      PercentEncode(e.PrevHash),
		hSigner:        PercentEncode(e.Signer),
		hSignature:     PercentEncode(e.Signature),
	}
	n := 0
	for _, s := range v {
		if s != "" {
			n++
		}
	}
	return n
}

// eventBody is the body of e's message.
func eventBody(e *Event) []byte {
	if len(e.Data) > 0 {
		return e.Data
	}
	return nil
}

// plainSource reports whether src survives sdk-go's URI-reference round
// trip (url.Parse, then String) unchanged, so that the direct codec writes
// and reads what the binding would.
func plainSource(src string) bool {
	if len(src) == 0 {
		return false
	}
	// Letters, digits and "-._~/" with no leading "//" (an authority)
	// parse to a path that String gives back as it is: no parse needed.
	simple := !strings.HasPrefix(src, "//")
	for i := 0; i < len(src) && simple; i++ {
		c := src[i]
		simple = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '/'
	}
	if simple {
		return true
	}
	u, err := url.Parse(src)
	return err == nil && u.String() == src && strings.TrimSpace(src) != ""
}
