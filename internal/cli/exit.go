package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
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

// ParseInterspersed parses flags that may come before, between and after
// the positional arguments, which it returns in order. Everything after
// "--" is positional. An undefined flag that may be a word of a prompt
// ("-5") is an error saying to put such words after "--".
func ParseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := Parse(fs, args); err != nil {
			if strings.Contains(err.Error(), "flag provided but not defined") {
				err = fmt.Errorf("%w (arguments that start with - go after --: %s [flags] -- ARGS)", err, fs.Name())
			}
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// NoArgs is an error wrapping ErrUsage when fs has positional arguments left.
func NoArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", ErrUsage, fs.Arg(0))
	}
	return nil
}

// Set reports which flags of fs were given on the command line.
func Set(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// VerboseHelp is the help of every command's -v flag.
const VerboseHelp = "also log debug output on stderr (warnings and errors always print)"

// Logger is the commands' logger: warnings and errors on w, debug output
// too when verbose.
func Logger(verbose bool, w io.Writer) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
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
