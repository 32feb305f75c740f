package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/internal/redact"
	"github.com/hookbus/hookbus/telemetry"
)

const long = `loop runs agent runs on a hookbus: every step of a run is an event on NATS
JetStream, and interceptors in any process allow, change or deny it.

Which bus: --nats URL (or $NATS_URL), or --context NAME (or $NATS_CONTEXT):
a context of the nats CLI, its servers, credentials and TLS files. A run
can instead start an embedded NATS server in its own process: --store DIR
(created if missing) or --embedded (./.hookbus). loop run and loop compact
given none of these use the server listening on nats://127.0.0.1:4222 (a
"loop server"), saying so, and so does a run whose embedded server finds
its address taken by one; loop serve and loop gateway refuse to start
without a bus. loop server is the embedded server alone, until
interrupted: a bus to attach runs, workers, interceptors and observers to.
Every command says on stderr, as it starts, which bus it uses.

Flags may come before or after a prompt; words of the prompt that start
with "-" go after "--". Credentials are never printed.

Exit codes: 0 the run completed with an answer; 1 an error; 2 a usage
mistake; 3 the run completed without an answer (denied, stopped, rejected,
max_steps, cost_limit, interrupted); 4 the run waits for a human's approval.

"loop COMMAND --help" lists a command's flags; docs/COMMANDS.md lists them
all. Examples: loop run --store .hookbus "What is 6*7?", loop serve --nats
nats://127.0.0.1:4222 --agents agents.yaml.`

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
	a := &cli.App{Name: "loop", Version: telemetry.ReadBuild().String(), In: stdin, Out: stdout, Err: stderr}
	return a.Execute(ctx, newRoot(a), args)
}

// newRoot is the loop command and its subcommands.
func newRoot(a *cli.App) *cobra.Command {
	root := a.NewRoot("the hookbus agent loop: runs, workers, the embedded server", long)
	root.AddCommand(runCmd(a), serveCmd(a), submitCmd(a), compactCmd(a), serverCmd(a), keygenCmd(a), agentHookCmd(a), claudeHookCmd(a), gatewayCmd(a), doctorCmd(a), fakeModelCmd(a), closeIdleCmd(a))
	return root
}
