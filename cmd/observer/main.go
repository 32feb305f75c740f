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

const long = `observer reads and manages a hookbus: the record of runs (replay, tail, sessions,
runs, show, stats, verify), the interceptor registry (hooks), shared budgets,
approvals, the transparency log (checkpointer, checkpoint, prove, witness),
OpenTelemetry export (otel) and the web timeline (ui).

Which bus: --nats URL, or --context NAME (a context of the nats CLI), else
--store DIR (a hookbus store directory no server is running on), else
$NATS_URL or $NATS_CONTEXT, else the server listening on nats://127.0.0.1:4222
(a running "loop run", "loop serve" or "loop server"). When nothing listens there, replay, sessions, runs, show,
stats, verify, approvals, hooks and provision open ./.hookbus (the store
"make run" leaves) if it exists, and so do checkpoint, checkpointer and
prove; tail needs a running server. Every command says on stderr which bus
it uses.

replay prints the matching events in stream order and exits (1 when the
filters match nothing); --run takes a run id or a unique prefix of one (the
timeline shows run ids shortened to a prefix); show, approvals, approve and
reject take RUN so too. sessions, runs, show and stats read the stream
(within --since) and report their progress on stderr. Listings print a table,
or JSON with --output json (-o json). Credentials are never printed.

"observer COMMAND --help" lists a command's flags; docs/COMMANDS.md lists them all.`

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
	// Every message and log line goes through the redactor: no password
	// or token of the command line or the environment is ever printed.
	stderr = redact.NewWriter(stderr, redact.Secrets(args, os.Getenv)...)
	a := &cli.App{Name: "observer", Version: telemetry.ReadBuild().String(), In: os.Stdin, Out: stdout, Err: stderr}
	return a.Execute(ctx, newRoot(a), args)
}

// newRoot is the observer command and its subcommands.
func newRoot(a *cli.App) *cobra.Command {
	root := a.NewRoot("read and manage a hookbus: runs, hooks, approvals, budgets, audits", long)
	root.AddCommand(
		replayCmd(a, false), replayCmd(a, true), sessionsCmd(a), runsCmd(a), showCmd(a), explainCmd(a), statsCmd(a),
		hooksCmd(a), policyCmd(a), budgetsCmd(a), shadowCmd(a), provisionCmd(a),
		verifyCmd(a), checkpointerCmd(a), checkpointCmd(a), proveCmd(a), verifyProofCmd(a), witnessCmd(a), keygenCmd(a),
		approvalsCmd(a), answerCmd(a, "approve"), answerCmd(a, "reject"),
		otelCmd(a), uiCmd(a),
	)
	return root
}
