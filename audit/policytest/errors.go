package policytest

import "errors"

var (
	// ErrInvalid is returned by New for no policy or a bad option (an
	// agent or harness glob that does not parse).
	ErrInvalid = errors.New("policytest: invalid test")
)
