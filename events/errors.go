package events

import "errors"

var (
	// ErrInvalidID is returned when an agent, session, run or plugin id cannot
	// be used as a NATS subject token.
	ErrInvalidID = errors.New("hookbus: invalid id")
	// ErrUnknownStage is returned for a stage name hookbus does not define.
	ErrUnknownStage = errors.New("hookbus: unknown stage")
	// ErrInvalidSubject is returned when a subject is not a hookbus subject.
	ErrInvalidSubject = errors.New("hookbus: invalid subject")
	// ErrMalformedEvent is returned by Decode for a message that is not a
	// valid hookbus CloudEvent (missing or bad attributes, bad extensions,
	// undecodable data).
	ErrMalformedEvent = errors.New("hookbus: malformed event")
	// ErrPayload is returned when a payload cannot be encoded or does not
	// decode into the requested type.
	ErrPayload = errors.New("hookbus: bad payload")
)
