package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/hookbus/hookbus/internal/cli"
	"github.com/hookbus/hookbus/internal/redact"
)

const usage = `loop — the hookbus agent loop

Usage:
  loop run     [connection] [--agents FILE] [--agent ID] [--model P:NAME] [--tools T,T] [--claude-settings FILE]...
               [--session ID] [--trace] PROMPT | - | --prompt-file FILE
  loop serve   [connection] [--concurrency N] [--agents FILE | --agent ID,ID] [--replace-definition] [--model P:NAME] [--claude-settings FILE]...
  loop submit  [--nats URL] [--agent ID] [--session ID] [--wait] [--timeout D] PROMPT | - | --prompt-file FILE
  loop compact [connection] [--agents FILE] [--agent ID] --session ID
  loop server  [--store DIR] [--listen ADDR]
  loop keygen  [--out FILE]
  loop agent-hook --harness claude|gemini|codex [--nats URL | --config FILE] [--agent ID] [--policy ignore|fail] [--timeout D]
               (a coding agent's command hook: Claude Code, Gemini CLI, Codex CLI)
  loop claude-hook [--nats URL] [--agent ID] [--policy ignore|fail] [--timeout D]   (agent-hook --harness claude)
  loop gateway --listen ADDR [--nats URL] [--harness H,H] [--agent ID] [--policy ignore|fail]   (the same over http)

connection: --nats URL [--creds FILE | --nkey FILE | --user U --password P | --token T] [--tls-ca FILE],
            or --store DIR [--listen ADDR]

With neither --nats nor --store (nor $NATS_URL), run and serve start an
embedded NATS server on ./.hookbus that listens on 127.0.0.1:4222, so
observers and interceptors in other processes can connect while it runs.
loop server is that embedded server alone, until interrupted: a bus to
attach runs (loop run --nats nats://127.0.0.1:4222), workers, interceptors
and observers to. submit connects to $NATS_URL or nats://127.0.0.1:4222.

Flags may come before or after the prompt; words of the prompt that start
with "-" go after "--". Credentials are never printed.

Exit codes: 0 the run completed with an answer; 1 an error; 2 a usage
mistake; 3 the run completed without an answer (denied, stopped, rejected,
max_steps, cost_limit, interrupted); 4 the run waits for a human's approval.

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
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// Every message and log line goes through the redactor: no password
	// or token of the command line or the environment is ever printed.
	stderr = redact.NewWriter(stderr, redact.Secrets(args, os.Getenv)...)
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	var err error
	code := exitOK
	switch args[0] {
	case "run":
		code, err = cmdRun(ctx, args[1:], stdin, stdout, stderr)
	case "serve":
		err = cmdServe(ctx, args[1:], stdout, stderr)
	case "compact":
		code, err = cmdCompact(ctx, args[1:], stdout, stderr)
	case "submit":
		code, err = cmdSubmit(ctx, args[1:], stdin, stdout, stderr)
	case "keygen":
		err = cmdKeygen(ctx, args[1:], stdout, stderr)
	case "server":
		err = cmdServer(ctx, args[1:], stdout, stderr)
	case "agent-hook":
		code, err = cmdAgentHook(ctx, args[1:], stdin, stdout, stderr)
	case "claude-hook":
		code, err = cmdClaudeHook(ctx, args[1:], stdin, stdout, stderr)
	case "gateway":
		err = cmdGateway(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "loop: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	return cli.ExitCode(stderr, "loop "+args[0], code, err)
}
