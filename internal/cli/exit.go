package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// Exit codes shared by the commands (loop adds 3: a run without an answer).
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// Parse parses args into fs: -h or --help gives ErrHelp, a mistake an error
// wrapping ErrUsage.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ErrHelp
		}
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	return nil
}

// NoArgs is an error wrapping ErrUsage when fs has positional arguments left.
func NoArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", ErrUsage, fs.Arg(0))
	}
	return nil
}

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
