package httphook

import "errors"

var (
	// ErrInvalidConfig is returned by New and Factory for a handler that
	// cannot run: no url, a url that is not http or https, an unknown
	// field.
	ErrInvalidConfig = errors.New("http hook: invalid config")
	// ErrConfig is ErrInvalidConfig.
	//
	// Deprecated: use ErrInvalidConfig.
	ErrConfig = ErrInvalidConfig
	// ErrStatus is the failure of a hook whose server answered a status
	// other than 2xx: Claude Code's non-blocking error (hook.failed, kind
	// "error"; the action proceeds).
	ErrStatus = errors.New("http hook: non-2xx status")
)
