package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/hookbus/hookbus/agents"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

const runLong = `Runs one agent run and prints its answer on stdout, the run and session ids on
stderr. The prompt is the words after the flags (flags may also follow them),
stdin with "-", or a file (--prompt-file).

The run needs a bus: --nats URL or --context NAME, or an embedded server
(--store DIR, --embedded). Given none, it uses the server listening on
nats://127.0.0.1:4222 (a "loop server"), and so does a run whose embedded
server finds its --listen address taken by one: it says so on stderr.

While NATS is away, a run waits (--outage, 5 minutes by default) and says on
stderr what it waits for; after that its attempt stops, and the run is not
failed.`

const compactLong = `Summarises a session's conversation with the agent's model (compact.before,
compact.after): its next runs start from the summary.`

func runCmd(a *cli.App) *cobra.Command {
	return cli.Command("run [flags] PROMPT | - | --prompt-file FILE", "Run one agent run and print its answer", runLong,
		func(fs *pflag.FlagSet) cli.Run { return runOrCompact(a, "run", fs) })
}

// compactCmd compacts a session's conversation on request: a run of its
// own that summarises the session with the agent's model.
func compactCmd(a *cli.App) *cobra.Command {
	return cli.Command("compact --session ID [flags]", "Summarise a session's conversation", compactLong,
		func(fs *pflag.FlagSet) cli.Run { return runOrCompact(a, "compact", fs) })
}

// runOptions are the flags of loop run and loop compact.
type runOptions struct {
	compact         bool
	conn            cli.ConnFlags
	af              agentFlags
	pf              promptFlags
	agent, session  string
	trace, demoHook bool
	fs              *pflag.FlagSet
}

func runOrCompact(a *cli.App, cmd string, fs *pflag.FlagSet) cli.Run {
	o := &runOptions{compact: cmd == "compact", conn: cli.ConnFlags{App: a, Embeds: true, Attach: true}, fs: fs}
	o.conn.Register(fs)
	o.af.register(fs)
	if !o.compact {
		o.pf.register(fs)
	}
	fs.StringVar(&o.af.file, "agents", "", "agent definitions file (YAML); --agent picks the agent")
	fs.StringVar(&o.agent, "agent", defaultAgent, "agent id (with --agents: one of the file's)")
	fs.StringVar(&o.session, "session", "", "session id (default: a new one); the same id continues the conversation")
	fs.BoolVar(&o.trace, "trace", false, "print every event on stderr as it is published")
	fs.BoolVar(&o.demoHook, "demo-hook", false, "register the demo's in-process interceptor: a tool.after hook (plugin "+demoPlugin+") that redacts the time of day from the clock's result (make run shows it)")
	return func(ctx context.Context, pos []string) error {
		code, err := o.run(ctx, a, pos)
		a.Code = code
		return err
	}
}

func (o *runOptions) run(ctx context.Context, a *cli.App, pos []string) (int, error) {
	stdin, stdout, stderr := a.In, a.Out, a.Err
	if err := o.af.check(cli.Set(o.fs)); err != nil {
		return exitUsage, err
	}
	req, err := o.request(stdin, pos)
	if err != nil {
		return exitUsage, err
	}
	defs, err := o.af.definitions(o.agent)
	if err != nil {
		return exitUsage, err
	}
	if defs.Agent(o.agent) == nil {
		return exitUsage, fmt.Errorf("%w: %w: %q is not in %s (it has %s)", cli.ErrUsage, agents.ErrUnknownAgent, o.agent, o.af.file, strings.Join(defs.IDs(), ", "))
	}
	defs.Agents = withSubagents(defs, o.agent) // what the run may call, and nothing else
	log := a.Log.Logger(stderr)
	signer, err := loadSigner(o.af.signing)
	if err != nil {
		return exitUsage, err
	}
	claude, err := loadClaudeSettings(o.af.claude, log)
	if err != nil {
		return exitUsage, err
	}
	built, closeAgents, err := build(ctx, defs, log)
	if err != nil {
		return exitFailure, err
	}
	defer closeAgents()
	c, err := o.conn.Open(ctx, "hookbus-loop", log, cli.Provision)
	if err != nil {
		return exitFailure, err
	}
	defer c.Close()
	var em loop.Emitter = c.Bus
	if o.trace {
		em = &tracer{Emitter: c.Bus, w: stderr}
	}
	hooks, stopHooks, err := syncHooks(ctx, c.Bus, log)
	if err != nil {
		return exitFailure, err
	}
	defer stopHooks()
	if o.demoHook {
		if err := registerDemoHook(hooks); err != nil {
			return exitFailure, err
		}
		fmt.Fprintf(stderr, "loop run: in-process hook %s on tool.after (clock) registered; a remote interceptor plugs into the same chain: \"observer hooks add --stage STAGE --plugin NAME\" and a service answering %s.hook.STAGE.NAME (README: \"Three terminals\")\n", demoPlugin, o.conn.Prefix)
	}
	engs, closeHooks, err := engines(built, engineDeps{em: em, h: c.Bus, q: runs.New(c.Bus), hooks: hooks, budget: sharedBudget(ctx, c.Bus, log),
		claude: claude, cache: remote.NewDecisionCache(c.Bus), signer: signer, log: log})
	if err != nil {
		return exitFailure, err
	}
	defer closeHooks()
	eng := engs[o.agent]
	res, err := eng.Run(ctx, req)
	return printResult(stdout, stderr, res, err)
}

// request is the run the flags and arguments ask for: a new run of the
// agent in the session (a new one by default), with the prompt, or the
// session's compaction. Bad ids and arguments are usage errors, refused
// before anything is started or written.
func (o *runOptions) request(stdin io.Reader, pos []string) (*events.RunRequest, error) {
	var p string
	if o.compact {
		if len(pos) > 0 {
			return nil, fmt.Errorf("%w: loop compact takes no arguments (got %q)", cli.ErrUsage, pos)
		}
		if o.session == "" {
			return nil, fmt.Errorf("%w: loop compact needs --session", cli.ErrUsage)
		}
	} else {
		var err error
		if p, err = o.pf.read(pos, stdin); err != nil {
			return nil, err
		}
	}
	if o.session == "" {
		o.session = events.NewID()
	}
	req := &events.RunRequest{RunID: events.NewID(), AgentID: o.agent, SessionID: o.session, Prompt: p, Compact: o.compact}
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	return req, nil
}

// printResult says how the run went (on stderr: its end, what waits for
// approval and how to answer) and prints its answer; it returns the exit
// code: waiting, no answer (an end other than done), or ok.
func printResult(stdout, stderr io.Writer, res *loop.Result, err error) (int, error) {
	if res != nil {
		fmt.Fprintf(stderr, "run %s session %s agent %s: %s", res.RunID, res.SessionID, res.AgentID, res.Reason)
		if res.Detail != "" {
			fmt.Fprintf(stderr, " (%s)", res.Detail)
		}
		fmt.Fprintf(stderr, ", %d steps, %d events\n", res.Steps, res.Events)
	}
	if err != nil {
		return exitFailure, err
	}
	if res.Reason == loop.ReasonWaiting {
		for _, w := range res.Waiting {
			fmt.Fprintf(stderr, "  call %s %s%s waits for approval: %s (expires %s)\n", w.Call.ID, w.Call.Name, w.Call.Arguments, w.Reason, w.ExpiresAt.Local().Format("2006-01-02 15:04:05"))
		}
		fmt.Fprintf(stderr, "answer with: observer approve %s   or   observer reject %s --reason TEXT [--continue]\n", res.RunID, res.RunID)
		fmt.Fprintln(stderr, "a worker (loop serve) on this bus records the answer and finishes the run")
		return exitWaiting, nil
	}
	if res.Answer != "" {
		fmt.Fprintln(stdout, res.Answer)
	}
	if res.Reason != events.ReasonDone {
		return exitNoAnswer, nil
	}
	return exitOK, nil
}

// tracer prints every event as it is appended.
type tracer struct {
	loop.Emitter
	mu sync.Mutex
	w  io.Writer
}

func (t *tracer) print(e *events.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	_ = cli.PrintTimeline(t.w, e)
}

func (t *tracer) Append(ctx context.Context, e *events.Event, claim uint64) error {
	t.print(e)
	return t.Emitter.Append(ctx, e, claim)
}

func (t *tracer) AppendSync(ctx context.Context, e *events.Event, claim uint64) error {
	t.print(e)
	return t.Emitter.AppendSync(ctx, e, claim)
}

func (t *tracer) Claim(ctx context.Context, e *events.Event, last uint64) (uint64, error) {
	t.print(e)
	return t.Emitter.Claim(ctx, e, last)
}

func (t *tracer) Reclaim(ctx context.Context, e *events.Event, last, seen uint64) (uint64, error) {
	t.print(e)
	return t.Emitter.Reclaim(ctx, e, last, seen)
}

func (t *tracer) AppendAfter(ctx context.Context, e *events.Event, seen uint64) (uint64, error) {
	t.print(e)
	return t.Emitter.AppendAfter(ctx, e, seen)
}

// withSubagents returns agent id and the agents it may call, transitively.
func withSubagents(f *agents.File, id string) []*agents.Agent {
	var out []*agents.Agent
	seen := map[string]bool{}
	var add func(string)
	add = func(id string) {
		a := f.Agent(id)
		if a == nil || seen[id] {
			return
		}
		seen[id] = true
		out = append(out, a)
		for _, s := range a.Subagents {
			add(s)
		}
	}
	add(id)
	return out
}
