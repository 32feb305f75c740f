package tracectx

import "errors"

// ErrTraceparent is returned by Parse for a value that is not a W3C
// traceparent.
var ErrTraceparent = errors.New("tracectx: malformed traceparent")
