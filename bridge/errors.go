package bridge

import "errors"

var (
	// ErrInvalidConfig is returned by New for a configuration it cannot
	// run with; the message names the field.
	ErrInvalidConfig = errors.New("bridge: invalid config")
	// ErrUnrecorded is returned by Handle (with the policy's answer) when
	// the event could not be recorded or decided in time: NATS away or
	// slow, or a session too busy to append to.
	ErrUnrecorded = errors.New("bridge: event not recorded")
)
