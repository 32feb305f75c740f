package otlp

import "errors"

// ErrInvalidConfig is returned by New for settings that cannot work: no
// endpoint at all, an endpoint that is not an http(s) URL, an unknown
// protocol. The error names the flag or variable at fault.
var ErrInvalidConfig = errors.New("otlp: invalid config")
