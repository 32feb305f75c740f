package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/hookbus/hookbus/internal/cli"
)

const usage = `loop — the hookbus agent loop

Usage:
  loop run    [--nats URL | --store DIR] [--listen ADDR] [--agents FILE] [--agent ID] [--model P:NAME] [--tools T,T]
              [--claude-settings FILE]... [--session ID] [--trace] PROMPT
  loop serve  [--nats URL | --store DIR] [--listen ADDR] [--concurrency N] [--agents FILE | --agents ID,ID] [--model P:NAME]
              [--claude-settings FILE]...
  loop submit [--nats URL] [--agent ID] [--session ID] [--wait] [--timeout D] PROMPT
  loop compact [--nats URL | --store DIR] [--agents FILE] [--agent ID] --session ID

With neither --nats nor --store, run and serve start an embedded NATS server
on ./.hookbus that listens on 127.0.0.1:4222, so observers and interceptors in
other processes can connect while it runs.

"loop COMMAND --help" lists a command's flags.
`

// exit codes
const (
	exitOK       = cli.ExitOK
	exitFailure  = cli.ExitFailure
	exitUsage    = cli.ExitUsage
	exitNoAnswer = 3 // the run ended without an answer: denied, stopped, rejected, max_steps, cost_limit, interrupted
	exitWaiting  = 4 // the run waits for a human's approval
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	var err error
	code := exitOK
	switch args[0] {
	case "run":
		code, err = cmdRun(ctx, args[1:], stdout, stderr)
	case "serve":
		err = cmdServe(ctx, args[1:], stdout, stderr)
	case "compact":
		code, err = cmdCompact(ctx, args[1:], stdout, stderr)
	case "submit":
		code, err = cmdSubmit(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "loop: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	return cli.ExitCode(stderr, "loop "+args[0], code, err)
}
