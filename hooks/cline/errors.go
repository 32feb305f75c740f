package cline

import "github.com/hookbus/hookbus/hooks/harness"

// ErrBadInput is returned by Harness.Parse and Input.Map for a hook input
// that does not parse or lacks what its event needs. It is
// harness.ErrBadInput.
var ErrBadInput = harness.ErrBadInput
