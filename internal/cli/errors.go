package cli

import "errors"

// ErrUsage marks a command-line mistake: the command prints its usage and
// exits 2.
var ErrUsage = errors.New("usage")
