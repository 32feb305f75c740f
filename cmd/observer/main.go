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

const usage = `observer — read and manage a hookbus

Usage:
  observer replay    [connection] [--agent A] [--session S] [--run R [--tree]] [--stage X] [--since DURATION] [--json]
  observer tail      [connection] [--agent A] [--session S] [--run R] [--stage X] [--json]
  observer sessions  [connection] [--agent A] [--since D] [--json]   (sessions: runs, last activity, last run's status)
  observer runs      [connection] [--agent A] [--session S] [--since D] [--reason R] [--queued] [--json]
  observer show      [connection] RUN [--json]   (one run as a tree: steps, tools, hooks' decisions and changes, approvals, sub-agents)
  observer stats     [connection] [--agent A] [--since D] [--json]   (per plugin and stage: calls, latency, decisions, failures)
  observer hooks     list|add|rm|grant|revoke|disable|enable [connection]   (see "observer hooks --help")
  observer budgets   [list|set|rm] [connection]   (shared budgets: use against limits; see "observer budgets --help")
  observer shadow    [connection] --stage S --plugin P [--since D] [--agent A] [--session S] [--json]   (backtest a candidate interceptor)
  observer provision [connection] [--replicas N] [--max-age D] [--wait D]   (an operator: create or update the streams and buckets)
  observer verify    [connection] [--agent A] [--session S] [--run R] [--since D] [--public-key KEY]... [--json] [-q]
                     [--checkpoint latest|FILE --checkpoint-key KEY [--witness-key KEY]...]   (also prove the whole stream)
  observer checkpointer [connection] --key FILE [--every N] [--interval D] [--witness NAME=KEY]... [--once]
  observer checkpoint [connection] [--all] [--note] [--key KEY] [--json]   (the stored checkpoints of the stream)
  observer prove     [connection] RUN --key KEY [--checkpoint latest|FILE] > proof.json   (inclusion proofs of a run's events)
  observer verify-proof proof.json --key KEY [--witness-key KEY]... [--public-key NKEY]...   (offline)
  observer witness   [connection] --key FILE --state DIR --checkpointer-key KEY [--name NAME]   (cosign checkpoints)
  observer keygen    --name NAME --out FILE   (a checkpointer's or a witness' key)
  observer approvals [connection] [--agent A] [--all] [RUN]   (tool calls waiting for a human)
  observer approve   [connection] RUN [--call ID] [--note TEXT] [--comment TEXT]   (recorded at once; the first answer wins)
  observer reject    [connection] RUN [--call ID] --reason TEXT [--continue] [--note TEXT]
  observer otel      [connection] --endpoint URL [--durable NAME] [--metrics ADDR]   (runs as OpenTelemetry traces)
  observer ui        [connection] [--listen ADDR] [--allow-approvals] [--public-key KEY]...   (the web timeline: open the URL it prints)

connection: --nats URL [--creds FILE | --nkey FILE | --user U --password P | --token T] [--tls-ca FILE],
            or --store DIR (a hookbus store directory no server is running on)

Which bus: --nats URL, else --store DIR, else $NATS_URL, else the server
listening on nats://127.0.0.1:4222 (a running "loop run", "loop serve" or
"loop server"). When nothing listens there, replay, sessions, runs, show,
stats, verify, approvals, hooks and provision open ./.hookbus (the store
"make run" and "loop run" leave) if it exists, and so do checkpoint,
checkpointer and prove; tail needs a running server.

replay prints the matching events in stream order and exits (1 when the
filters match nothing); --run takes a run id or a unique prefix of one (the
timeline shows run ids shortened to a prefix); show, approvals, approve and
reject take RUN so too.
sessions, runs, show and stats read the stream (within --since) and report
their progress on stderr. tail follows new events until interrupted.
Credentials are never printed.

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
	// Every message and log line goes through the redactor: no password
	// or token of the command line or the environment is ever printed.
	stderr = redact.NewWriter(stderr, redact.Secrets(args, os.Getenv)...)
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
	case "sessions":
		err = cmdSessions(ctx, args[1:], stdout, stderr)
	case "runs":
		err = cmdRuns(ctx, args[1:], stdout, stderr)
	case "show":
		err = cmdShow(ctx, args[1:], stdout, stderr)
	case "stats":
		err = cmdStats(ctx, args[1:], stdout, stderr)
	case "provision":
		err = cmdProvision(ctx, args[1:], stdout, stderr)
	case "hooks":
		err = cmdHooks(ctx, args[1:], stdout, stderr)
	case "verify":
		err = cmdVerify(ctx, args[1:], stdout, stderr)
	case "checkpointer":
		err = cmdCheckpointer(ctx, args[1:], stdout, stderr)
	case "checkpoint":
		err = cmdCheckpoint(ctx, args[1:], stdout, stderr)
	case "prove":
		err = cmdProve(ctx, args[1:], stdout, stderr)
	case "verify-proof":
		err = cmdVerifyProof(ctx, args[1:], stdout, stderr)
	case "witness":
		err = cmdWitness(ctx, args[1:], stdout, stderr)
	case "keygen":
		err = cmdKeygen(ctx, args[1:], stdout, stderr)
	case "budgets":
		err = cmdBudgets(ctx, args[1:], stdout, stderr)
	case "shadow":
		err = cmdShadow(ctx, args[1:], stdout, stderr)
	case "approvals":
		err = cmdApprovals(ctx, args[1:], stdout, stderr)
	case "approve", "reject":
		err = cmdAnswer(ctx, args[0], args[1:], stdout, stderr)
	case "otel":
		err = cmdOtel(ctx, args[1:], stdout, stderr)
	case "ui":
		err = cmdUI(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "observer: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	return cli.ExitCode(stderr, "observer "+args[0], exitOK, err)
}
