package cli

import (
	"errors"
	"fmt"
	"io"
)

// Exit codes shared by the commands (loop adds 3: a run without an answer,
// and 4: a run waiting for a human's approval).
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// ExitCode reports err on stderr as "<command>: <err>" and returns the exit
// code: code when err is nil, ExitOK for ErrHelp, ExitUsage for ErrUsage,
// otherwise code if it is not ExitOK, else ExitFailure.
func ExitCode(stderr io.Writer, command string, code int, err error) int {
	switch {
	case err == nil:
		return code
	case errors.Is(err, ErrHelp):
		return ExitOK
	}
	fmt.Fprintf(stderr, "%s: %v\n", command, err)
	switch {
	case errors.Is(err, ErrUsage):
		return ExitUsage
	case code != ExitOK:
		return code
	}
	return ExitFailure
}
