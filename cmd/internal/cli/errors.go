package cli

import "errors"

var (
	// ErrUsage marks a command-line mistake: the command says what is wrong
	// and exits 2.
	ErrUsage = errors.New("usage")
	// ErrHelp says a command printed its help: it exits 0.
	ErrHelp = errors.New("help shown")
	// ErrPermission says the server refused the connection's user
	// something (a NATS permissions violation): the command exits 1
	// naming what was refused.
	ErrPermission = errors.New("permission denied")
)
