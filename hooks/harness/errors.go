package harness

import "errors"

// ErrBadInput is returned by a Protocol's Parse and an Input's Map for a
// hook input that does not parse or lacks what its event needs (no
// session_id, a tool event without tool_name, ...); every harness's
// parsing returns it.
var ErrBadInput = errors.New("harness: bad hook input")
