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

const usage = `observer — read and manage a hookbus

Usage:
  observer replay [--nats URL | --store DIR] [--agent A] [--session S] [--run R] [--stage X] [--since DURATION] [--json]
  observer tail   [--nats URL] [--agent A] [--session S] [--run R] [--stage X] [--json]
  observer provision [--nats URL] [--replicas N]    (an operator: create or update the streams and buckets)
  observer hooks  list|add|rm|grant|revoke [--nats URL | --store DIR]   (see "observer hooks --help")
  observer approvals [--agent A] [--all]            (tool calls waiting for a human)
  observer approve RUN [--call ID] [--by NAME] [--comment TEXT]
  observer reject  RUN [--call ID] --reason TEXT [--continue]

replay prints the matching events in stream order and exits; --store reads a
stopped server's store directory. tail follows new events until interrupted.
Without --nats or --store they connect to $NATS_URL or nats://127.0.0.1:4222
(where "loop run" listens).

"observer COMMAND --help" lists a command's flags.
`

const (
	exitOK    = cli.ExitOK
	exitUsage = cli.ExitUsage
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
	switch args[0] {
	case "replay":
		err = cmdReplay(ctx, args[1:], stdout, stderr, false)
	case "tail":
		err = cmdReplay(ctx, args[1:], stdout, stderr, true)
	case "provision":
		err = cmdProvision(ctx, args[1:], stdout, stderr)
	case "hooks":
		err = cmdHooks(ctx, args[1:], stdout, stderr)
	case "approvals":
		err = cmdApprovals(ctx, args[1:], stdout, stderr)
	case "approve", "reject":
		err = cmdAnswer(ctx, args[0], args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "observer: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	return cli.ExitCode(stderr, "observer "+args[0], exitOK, err)
}
