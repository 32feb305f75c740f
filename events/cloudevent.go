package events

import (
	"fmt"
	"strconv"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
)

// CloudEvent returns the event as an sdk-go CloudEvent (spec 1.0).
func (e *Event) CloudEvent() cloudevents.Event {
	ce := cloudevents.New(cloudevents.CloudEventsVersionV1)
	ce.SetID(e.ID)
	ce.SetType(e.Type())
	ce.SetSource(e.Source)
	ce.SetTime(e.Time)
	if e.Subject != "" {
		ce.SetSubject(e.Subject)
	}
	ce.SetDataContentType(ContentTypeJSON)
	ce.SetExtension(ExtAgentID, e.AgentID)
	ce.SetExtension(ExtSessionID, e.SessionID)
	ce.SetExtension(ExtRunID, e.RunID)
	ce.SetExtension(ExtStep, int32(e.Step))
	ce.SetExtension(ExtSeq, e.SeqString())
	for _, x := range [...]struct{ name, v string }{
		{ExtTraceparent, e.Traceparent}, {ExtDataRef, e.DataRef}, {ExtPrevHash, e.PrevHash}, {ExtSigner, e.Signer}, {ExtSignature, e.Signature},
	} {
		if x.v != "" {
			ce.SetExtension(x.name, x.v)
		}
	}
	if e.ParentRunID != "" {
		ce.SetExtension(ExtParentAgentID, e.ParentAgentID)
		ce.SetExtension(ExtParentSessionID, e.ParentSessionID)
		ce.SetExtension(ExtParentRunID, e.ParentRunID)
	}
	if len(e.Data) > 0 {
		ce.DataEncoded = e.Data
	}
	return ce
}

// FromCloudEvent reads a hookbus event out of a CloudEvent. It returns an
// error wrapping ErrMalformedEvent when the CloudEvent is invalid or lacks
// hookbus' type and extensions.
func FromCloudEvent(ce cloudevents.Event) (*Event, error) {
	if err := ce.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedEvent, err)
	}
	if ce.SpecVersion() != cloudevents.CloudEventsVersionV1 {
		return nil, fmt.Errorf("%w: specversion %q (want 1.0)", ErrMalformedEvent, ce.SpecVersion())
	}
	stage, err := StageFromType(ce.Type())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedEvent, err)
	}
	if ct := ce.DataContentType(); ct != "" && ct != ContentTypeJSON {
		return nil, fmt.Errorf("%w: event %s datacontenttype %q (want %s)", ErrMalformedEvent, ce.ID(), ct, ContentTypeJSON)
	}
	e := &Event{
		ID: ce.ID(), Stage: stage, Source: ce.Source(), Time: ce.Time(), Subject: ce.Subject(),
		Data: ce.Data(),
	}
	ext := ce.Extensions()
	str := func(name string, required bool) (string, error) {
		v, ok := ext[name]
		if !ok {
			if required {
				return "", fmt.Errorf("%w: event %s lacks extension %s", ErrMalformedEvent, ce.ID(), name)
			}
			return "", nil
		}
		s, err := types.Format(v)
		if err != nil {
			return "", fmt.Errorf("%w: event %s extension %s: %v", ErrMalformedEvent, ce.ID(), name, err)
		}
		return s, nil
	}
	for _, x := range [...]struct {
		dst      *string
		name     string
		required bool
	}{
		{&e.AgentID, ExtAgentID, true}, {&e.SessionID, ExtSessionID, true}, {&e.RunID, ExtRunID, true},
		{&e.Traceparent, ExtTraceparent, false}, {&e.DataRef, ExtDataRef, false},
		{&e.ParentAgentID, ExtParentAgentID, false}, {&e.ParentSessionID, ExtParentSessionID, false}, {&e.ParentRunID, ExtParentRunID, false},
		{&e.PrevHash, ExtPrevHash, false}, {&e.Signer, ExtSigner, false}, {&e.Signature, ExtSignature, false},
	} {
		if *x.dst, err = str(x.name, x.required); err != nil {
			return nil, err
		}
	}
	step, err := str(ExtStep, true)
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(step)
	if err != nil {
		return nil, fmt.Errorf("%w: event %s extension step %q is not an integer", ErrMalformedEvent, ce.ID(), step)
	}
	e.Step = n
	seq, err := str(ExtSeq, true)
	if err != nil {
		return nil, err
	}
	if e.Seq, err = strconv.ParseUint(seq, 10, 64); err != nil {
		return nil, fmt.Errorf("%w: event %s extension seq %q is not an unsigned integer", ErrMalformedEvent, ce.ID(), seq)
	}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	return e, nil
}
