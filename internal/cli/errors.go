package cli

import "errors"

var (
	// ErrUsage marks a command-line mistake: the command says what is wrong
	// and exits 2.
	ErrUsage = errors.New("usage")
	// ErrHelp says a command printed its help: it exits 0.
	ErrHelp = errors.New("help shown")
)
