package fakellm

import "errors"

var (
	// ErrBadScript is returned by Parse and Recorded for a script that does
	// not parse or holds an impossible step.
	ErrBadScript = errors.New("fakellm: bad script")
	// ErrUnexpected is reported by Server.Err for a request the script did
	// not expect: one more than it has, or on another path.
	ErrUnexpected = errors.New("fakellm: unexpected request")
)
