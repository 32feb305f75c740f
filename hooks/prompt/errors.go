package prompt

import "errors"

var (
	// ErrInvalidConfig is returned by New for a configuration it cannot run
	// with (no prompt, no model, a negative timeout, a cache TTL under a
	// second); the message names the field.
	ErrInvalidConfig = errors.New("prompt hook: invalid config")
	// ErrNoVerdict is the error of a reply that holds no {"ok": ...}
	// object, or verdicts that disagree (ParseVerdict). Intercept's error
	// wraps it together with interceptors.ErrBadReply, so that hook.failed
	// records a bad_reply.
	ErrNoVerdict = errors.New("prompt hook: no verdict in the reply")
)
