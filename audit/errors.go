package audit

import "errors"

var (
	// ErrNoRun is returned by Show.Tree for a run whose events the fold
	// did not hold (no event of it was added, or its id does not start
	// with the fold's prefix).
	ErrNoRun = errors.New("audit: no such run")
)
