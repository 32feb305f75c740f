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
	// ErrToolArguments is returned by a tool given arguments it cannot use.
	ErrToolArguments = errors.New("loop: bad tool arguments")
	// ErrPathEscape is returned by ReadFile for a path outside its root.
	ErrPathEscape = errors.New("loop: path escapes the root directory")
	// ErrScriptExhausted is returned by the scripted model when a run asks for
	// more replies than its script has.
	ErrScriptExhausted = errors.New("loop: script has no reply for this step")
	// ErrBadScript is returned when a script file does not parse.
	ErrBadScript = errors.New("loop: bad script")
	// ErrLostRun is returned by Run when another attempt of the same run
	// (another worker, after this one's lease lapsed) claimed the session:
	// that attempt ends the run; this one wrote nothing more.
	ErrLostRun = errors.New("loop: run taken over by another attempt")
	// ErrCorruptSession is returned when a session's events cannot be
	// rebuilt into a conversation.
	ErrCorruptSession = errors.New("loop: session events cannot be rebuilt")
)
