package bus

import (
	"fmt"

	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
)

// decodeStored decodes an event read from the events stream and checks it
// against the subject it was stored on: the subject's agent, session and
// stage must be the event's. An event published on one session's subject
// that names another would otherwise be rebuilt into the wrong session; it
// is malformed (the error wraps events.ErrMalformedEvent). A person's answer
// read from its writer's subject gets the writer (events.Event.Writer).
func (b *Bus) decodeStored(subject string, h nats.Header, body []byte) (*events.Event, error) {
	e, err := events.Decode(h, body)
	if err != nil {
		return nil, err
	}
	agent, session, stage, writer, err := b.subj.ParseEventWriter(subject)
	if err != nil {
		return nil, fmt.Errorf("%w: stored on %q: %v", events.ErrMalformedEvent, subject, err)
	}
	if agent != e.AgentID || session != e.SessionID || stage != e.Stage {
		return nil, fmt.Errorf("%w: event %s is %s of %s/%s but was stored on %q",
			events.ErrMalformedEvent, e.ID, e.Stage, e.AgentID, e.SessionID, subject)
	}
	e.Writer = writer
	return e, nil
}
