package proc

import "errors"

// ErrEnv is returned by Env for an entry that is not NAME or NAME=value.
var ErrEnv = errors.New("not NAME or NAME=value")
