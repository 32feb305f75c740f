package loop

import "errors"

var (
	// ErrInvalidConfig is returned by New for a configuration it cannot run with.
	ErrInvalidConfig = errors.New("loop: invalid config")
	// ErrInvalidRequest is returned by Run for a request with bad ids or no
	// prompt; nothing is published.
	ErrInvalidRequest = errors.New("loop: invalid run request")
	// ErrUnknownTool is the error of a call to a tool the engine does not have.
	ErrUnknownTool = errors.New("loop: unknown tool")
	// ErrLostRun is returned by Run when another attempt of the same run
	// (another worker, after this one's lease lapsed) claimed the session:
	// that attempt ends the run; this one wrote nothing more.
	ErrLostRun = errors.New("loop: run taken over by another attempt")
	// ErrCorruptSession is returned when a session's events cannot be
	// rebuilt into a conversation.
	ErrCorruptSession = errors.New("loop: session events cannot be rebuilt")
)
