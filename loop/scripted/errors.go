package scripted

import "errors"

var (
	// ErrExhausted is returned by the scripted model when a run asks for
	// more replies than its script has.
	ErrExhausted = errors.New("scripted: script has no reply for this step")
	// ErrBadScript is returned when a script does not parse.
	ErrBadScript = errors.New("scripted: bad script")
)
