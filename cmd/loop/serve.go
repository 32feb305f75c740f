package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hookbus/hookbus/agents"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/cmd/internal/health"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/telemetry"
)

const serveLong = `Takes run requests of the agents it serves from the HOOKBUS_RUNS work queue until
interrupted: those of an agent definitions file (--agents FILE), or of the agent ids
the flags define (--agent, default demo). Start several to share the queue; a request
for an agent no worker serves waits for one. An agent's new runs run on the definition
the fleet registered for it (the first worker to serve it registers its own); a run
goes on with the definition it started on.

A worker needs a bus: --nats URL or --context NAME (or $NATS_URL, $NATS_CONTEXT), or
--embedded for a single-node server in its own process (its store in --store). Told
to stop (SIGTERM, Ctrl-C), it drains: it takes no new run, /readyz answers 503, and
the runs in flight may finish within --drain-timeout; those still running then are
handed back to the queue unended, and another worker resumes each from its record
(a tool call cut short is not run again). A second signal stops it at once: its runs
in flight are then recorded as interrupted.`

func serveCmd(a *cli.App) *cobra.Command {
	return cli.NoArgsCommand("serve [flags]", "Take run requests from the queue (a worker)", serveLong, func(fs *pflag.FlagSet) cli.Run {
		conn := cli.ConnFlags{App: a, Embeds: true, NeedsBus: true, Await: true}
		conn.Register(fs)
		var f serveFlags
		f.register(fs)
		return func(ctx context.Context, _ []string) error {
			stderr := a.Err
			defs, err := f.definitions(fs)
			if err != nil {
				return err
			}
			if f.cpuprofile != "" {
				stop, err := startCPUProfile(f.cpuprofile)
				if err != nil {
					return err
				}
				defer stop()
			}
			log := a.Log.Logger(stderr)
			signer, err := loadSigner(f.af.signing)
			if err != nil {
				return err
			}
			claude, err := loadClaudeSettings(f.af.claude, log)
			if err != nil {
				return err
			}
			built, closeAgents, err := build(ctx, defs, log)
			if err != nil {
				return err
			}
			defer closeAgents()
			c, err := conn.Open(ctx, "hookbus-worker", log, cli.Provision)
			if err != nil {
				return err
			}
			defer c.Close()
			hooks, stopHooks, err := awaitHooks(ctx, c, log)
			if err != nil {
				return err
			}
			defer stopHooks()
			em, handle, metrics, err := serveMetrics(ctx, c, log, f.admin.Addr != "")
			if err != nil {
				return err
			}
			h := health.New()
			c.HealthChecks(h)
			adm, err := f.admin.Serve("loop serve", log, metrics, h)
			if err != nil {
				return err
			}
			defer adm.Stop()
			adm.Say(&a.Log, stderr)
			q := runs.New(c.Bus)
			worker := thisWorker()
			engs, closeHooks, err := engines(built, engineDeps{em: em, h: c.Bus, q: q, hooks: hooks, budget: sharedBudget(ctx, c.Bus, log),
				claude: claude, cache: remote.NewDecisionCache(c.Bus), signer: signer, worker: worker, log: log})
			if err != nil {
				return err
			}
			defer closeHooks()
			served := f.served(built)
			w := loop.NewAgentsWorker(engs, log)
			cfg := runs.ConsumerConfig{Agents: served, Worker: worker.Name, Concurrency: f.concurrency, AckWait: f.lease, Close: w.Close}
			rc, stopResumer, err := takeRuns(ctx, c, q, cfg, handle(runHandler(w)), h, log)
			if err != nil {
				return err
			}
			defer stopResumer()
			printRoutes(stderr, rc.Routes())
			a.Log.Say(stderr, "loop serve: taking runs for %s, %d at a time (%s)", describeRoutes(rc.Routes()), f.concurrency, c.Where)
			<-ctx.Done()
			drain(a, rc, h, f.admin.Drain)
			return nil
		}
	})
}

// takeRuns starts taking cfg's runs from q with handler, and resuming
// the runs of its agents waiting for approval; h's "consumer" check fails
// once the consumers stop. The signal that ends ctx does not stop the
// runs: drain does.
func takeRuns(ctx context.Context, c *cli.Conn, q *runs.Queue, cfg runs.ConsumerConfig, handler runs.Handler, h *health.Health, log *slog.Logger) (*runs.Consumer, func(), error) {
	var rc *runs.Consumer
	err := c.Await(ctx, "take runs", func(ctx context.Context) (err error) {
		rc, err = q.Consume(context.WithoutCancel(ctx), cfg, handler)
		return err
	})
	if err != nil {
		return nil, nil, c.Explain(err)
	}
	var stopResumer func()
	err = c.Await(ctx, "resume the runs waiting for approval", func(ctx context.Context) (err error) {
		stopResumer, err = startResumer(ctx, c.Bus, cfg.Agents, log)
		return err
	})
	if err != nil {
		rc.Stop()
		return nil, nil, err
	}
	h.Add("consumer", func(context.Context) error {
		select {
		case <-rc.Closed():
			return errors.New("the run queue's consumers stopped")
		default:
			return nil
		}
	})
	return rc, stopResumer, nil
}

// serveFlags are loop serve's own flags.
type serveFlags struct {
	af          agentFlags
	concurrency int
	agentsFile  string
	ids         []string // --agent
	replace     bool
	lease       time.Duration
	cpuprofile  string
	admin       cli.AdminFlags
}

func (f *serveFlags) register(fs *pflag.FlagSet) {
	f.af.register(fs)
	fs.IntVar(&f.concurrency, "concurrency", 4, "runs in flight at once, whatever their agent (with at least as many as agents served, a new run is taken at once; with fewer, within about 100ms per agent)")
	fs.StringVar(&f.agentsFile, "agents", "", "an agent definitions file (FILE.yaml): serve its agents, each on its definition")
	fs.Func("agent", "an agent `ID` to serve with the agent the flags define (--model, --tools, ...); repeatable or comma-separated (default: demo). Requests of other agents are left to the workers that serve them", func(v string) error {
		for _, a := range strings.Split(v, ",") {
			if err := events.ValidateID("agent", a); err != nil {
				return err
			}
			f.ids = append(f.ids, a)
		}
		return nil
	})
	fs.BoolVar(&f.replace, "replace-definition", false, "make this worker's definitions the ones the fleet runs new runs on, even where another worker registered another (a deploy); workers with the old one then take only runs recorded on it")
	fs.DurationVar(&f.lease, "lease", runs.DefaultAckWait, "how long a run may go without a sign of life from its worker before another worker takes it over (the same for every worker of the pool)")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "write a CPU profile of the worker to FILE when it stops (go tool pprof; make bench-scale uses it)")
	f.admin.Register(fs, "127.0.0.1:9464", 30*time.Second, "take no new run and let the runs in flight finish (those still running are then handed back to the queue, for another worker to resume)")
}

// definitions checks the flags and returns the agents to serve: an agent
// definitions file's (--agents), or the agent ids the flags define
// (--agent, default demo). A bad flag is a usage error.
func (f *serveFlags) definitions(fs *pflag.FlagSet) (*agents.File, error) {
	if err := f.admin.Check(); err != nil {
		return nil, err
	}
	if f.lease < time.Second {
		return nil, fmt.Errorf("%w: --lease %s is shorter than a second", cli.ErrUsage, f.lease)
	}
	if f.concurrency < 1 {
		return nil, fmt.Errorf("%w: --concurrency %d must be at least 1", cli.ErrUsage, f.concurrency)
	}
	ids := f.ids
	switch {
	case f.agentsFile != "" && !isAgentsFile(f.agentsFile):
		return nil, fmt.Errorf("%w: --agents %q is not an agent definitions file (FILE.yaml); to serve agent ids with the agent the flags define, give --agent %s", cli.ErrUsage, f.agentsFile, f.agentsFile)
	case f.agentsFile != "" && len(ids) > 0:
		return nil, fmt.Errorf("%w: --agent names the agent ids the flags define; with --agents FILE the file names them", cli.ErrUsage)
	case f.agentsFile != "":
		f.af.file = f.agentsFile
	case len(ids) == 0:
		ids = []string{defaultAgent}
	}
	if err := f.af.check(cli.Set(fs)); err != nil {
		return nil, err
	}
	return f.af.definitions(ids...)
}

// served is what this worker serves of the queue: each built agent on its
// definition, read from the file or the flags.
func (f *serveFlags) served(built []*agents.Built) []runs.ServedAgent {
	source := "flags"
	if f.af.file != "" {
		source = f.af.file
	}
	served := make([]runs.ServedAgent, len(built))
	for i, b := range built {
		served[i] = runs.ServedAgent{ID: b.Agent.ID, Definition: b.Config.Definition, Source: source,
			Replace: f.replace, Adopt: b.Config.OnDefinitionChange == loop.DefinitionAdopt}
	}
	return served
}

// serveMetrics is what a worker records its runs through: with metrics
// (an admin address), an emitter and a run handler wrapper that count
// into Prometheus metrics, with the approvals gauge following the stream,
// and the metrics' handler; without, the bus and the handler as they are.
func serveMetrics(ctx context.Context, c *cli.Conn, log *slog.Logger, metrics bool) (loop.Emitter, func(runs.Handler) runs.Handler, http.Handler, error) {
	if !metrics {
		return loop.Emitter(c.Bus), func(h runs.Handler) runs.Handler { return h }, nil, nil
	}
	m := telemetry.NewMetrics()
	var follow <-chan error
	err := c.Await(ctx, "follow the approvals", func(ctx context.Context) (err error) {
		follow, err = m.FollowApprovals(ctx, c.Bus)
		return err
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("metrics: read the approvals: %w", err)
	}
	go func() {
		if err := <-follow; err != nil {
			log.Warn("loop serve: the approvals gauge stopped following the stream", "err", err)
		}
	}()
	return m.Emitter(c.Bus), m.RunHandler, m.Handler(), nil
}

const submitLong = `Enqueues a run request on hookbus.run.<agent> for the workers (loop serve).
A prompt of any size: a request over the server's max payload travels in the
payloads object store, as large events do. With --wait it waits for the run's
end and prints its answer, saying on stderr while no worker serves the agent.`

func submitCmd(a *cli.App) *cobra.Command {
	return cli.Command("submit [flags] PROMPT | - | --prompt-file FILE", "Queue a run request for the workers", submitLong, func(fs *pflag.FlagSet) cli.Run {
		conn := cli.ConnFlags{App: a}
		conn.Register(fs)
		var pf promptFlags
		pf.register(fs)
		agent := fs.String("agent", defaultAgent, "agent id")
		session := fs.String("session", "", "session id (default: a new one)")
		maxSteps := fs.Int("max-steps", 0, "most steps, at least 1 (default: the worker's)")
		wait := fs.Bool("wait", false, "wait for the run to end and print its answer")
		timeout := fs.Duration("timeout", 5*time.Minute, "with --wait: how long to wait")
		return func(ctx context.Context, pos []string) error {
			code, err := submit(ctx, a, pos, fs, &conn, &pf, *agent, *session, *maxSteps, *wait, *timeout)
			a.Code = code
			return err
		}
	})
}

func submit(ctx context.Context, a *cli.App, pos []string, fs *pflag.FlagSet, conn *cli.ConnFlags, pf *promptFlags, agent, session string, maxSteps int, wait bool, timeout time.Duration) (int, error) {
	stdin, stdout, stderr := a.In, a.Out, a.Err
	set := cli.Set(fs)
	if set["max-steps"] && maxSteps < 1 {
		return exitUsage, fmt.Errorf("%w: --max-steps %d: a run takes at least 1 step (leave it out for the worker's)", cli.ErrUsage, maxSteps)
	}
	if timeout <= 0 {
		return exitUsage, fmt.Errorf("%w: --timeout %s: give a positive duration", cli.ErrUsage, timeout)
	}
	if set["timeout"] && !wait {
		return exitUsage, fmt.Errorf("%w: --timeout is how long --wait waits: give --wait too", cli.ErrUsage)
	}
	p, err := pf.read(pos, stdin)
	if err != nil {
		return exitUsage, err
	}
	if session == "" {
		session = events.NewID()
	}
	req := &events.RunRequest{RunID: events.NewID(), AgentID: agent, SessionID: session, Prompt: p, MaxSteps: maxSteps, SubmittedAt: time.Now().UTC()}
	if err := req.Validate(); err != nil {
		return exitUsage, fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	c, gctx, release, err := conn.OpenGuarded(ctx, "hookbus-submit", a.Log.Logger(stderr), cli.ReadOnly)
	if err != nil {
		return exitFailure, err
	}
	defer release()
	if err := runs.New(c.Bus).Submit(gctx, req); err != nil {
		return exitFailure, c.Explain(err)
	}
	fmt.Fprintf(stderr, "submitted run %s session %s agent %s\n", req.RunID, req.SessionID, req.AgentID)
	if !wait {
		fmt.Fprintln(stdout, req.RunID)
		return exitOK, nil
	}
	wctx, cancel := context.WithTimeout(gctx, timeout)
	defer cancel()
	subject, _ := c.Bus.Subjects().Run(req.AgentID)
	watchCtx, stopWatch := context.WithCancel(wctx)
	waitingFor := make(chan string, 1)
	go func() {
		waitingFor <- watchCoverage(watchCtx, runs.NewFleet(c.Bus), req.AgentID, subject, stderr, 2*time.Second)
	}()
	end, err := c.Bus.WaitRun(wctx, req.AgentID, req.SessionID, req.RunID)
	stopWatch()
	why := <-waitingFor
	if err != nil && ctx.Err() != nil {
		// Interrupted: the run is not, it belongs to the workers now.
		return exitFailure, fmt.Errorf("stopped waiting; run %s goes on (queued until a worker takes it, then to its end): observer show %s prints it, observer tail --session %s follows it",
			req.RunID, req.RunID, req.SessionID)
	}
	if err != nil {
		if why != "" {
			err = fmt.Errorf("%w (%s; the request stays queued)", err, why)
		}
		return exitFailure, c.Explain(fmt.Errorf("waiting for run %s: %w", req.RunID, err))
	}
	if end.Stage == events.StageRunFailed {
		p, _ := events.Data[events.RunFailed](end)
		return exitFailure, fmt.Errorf("run %s failed: %s", req.RunID, p.Error)
	}
	rc, err := events.Data[events.RunCompleted](end)
	if err != nil {
		return exitFailure, err
	}
	fmt.Fprintf(stderr, "run %s: %s", req.RunID, rc.Reason)
	if rc.Detail != "" {
		fmt.Fprintf(stderr, " (%s)", rc.Detail)
	}
	fmt.Fprintf(stderr, ", %d steps\n", rc.Steps)
	if rc.Answer != "" {
		fmt.Fprintln(stdout, rc.Answer)
	}
	if rc.Reason != events.ReasonDone {
		return exitNoAnswer, nil
	}
	return exitOK, nil
}

// thisWorker names this process in the fleet and in its runs' run.started:
// host:pid, as the fleet names a worker by default.
func thisWorker() *events.Worker {
	host, _ := os.Hostname()
	name := cmp.Or(host, "worker")
	return &events.Worker{Name: name + ":" + strconv.Itoa(os.Getpid()), Host: host}
}

// handBackWait bounds the wait for a stopping worker's runs to return once
// they are handed back (or interrupted): the tools' and the model's calls
// in flight are cancelled, and an interrupted run's end is recorded. The
// Helm chart's worker template gives a pod this long after --drain-timeout.
const handBackWait = 15 * time.Second

// drain stops a worker told to stop: it takes no new run and /readyz
// answers 503; the runs in flight may finish within timeout, and those
// still running then are handed back to the queue unended (rc.HandBack),
// for another worker to resume. A second SIGTERM or interrupt stops the
// worker at once, its runs in flight recorded as interrupted (rc.Stop).
func drain(a *cli.App, rc *runs.Consumer, h *health.Health, timeout time.Duration) {
	stderr := a.Err
	second := make(chan os.Signal, 1)
	signal.Notify(second, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(second)
	h.Drain()
	began := time.Now()
	a.Log.Say(stderr, "loop serve: draining (at most %s); a second signal stops at once, interrupting the runs in flight", timeout)
	rc.Drain()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-rc.Closed():
		a.Log.Say(stderr, "loop serve: drained in %s", time.Since(began).Round(time.Millisecond))
		return
	case <-t.C:
		a.Log.Say(stderr, "loop serve: runs still in flight after %s: handing them back to the queue for another worker", timeout)
		rc.HandBack()
	case <-second:
		a.Log.Say(stderr, "loop serve: second signal: stopping now, the runs in flight are recorded as interrupted")
		rc.Stop()
	}
	w := time.NewTimer(handBackWait)
	defer w.Stop()
	select {
	case <-rc.Closed():
		a.Log.Say(stderr, "loop serve: stopped in %s (%d runs handed back)", time.Since(began).Round(time.Millisecond), rc.Stats().HandedBack)
	case <-second:
		a.Log.Say(stderr, "loop serve: second signal: stopping now")
		rc.Stop()
	case <-w.C:
		a.Log.Say(stderr, "loop serve: runs still returning after %s; their leases end and other workers take them", handBackWait)
	}
}

// runHandler is w as the run queue's handler, its errors read as what
// becomes of the request: a run another worker holds now is left to it
// (loop.ErrLostRun), one recorded on another definition is handed to that
// definition's workers (loop.DefinitionError), and any other error hands
// the request back for another attempt.
func runHandler(w *loop.Worker) runs.Handler {
	return func(ctx context.Context, req *events.RunRequest) (runs.Outcome, error) {
		err := w.Handle(ctx, req)
		var other *loop.DefinitionError
		switch {
		case errors.Is(err, loop.ErrLostRun):
			return runs.Outcome{Then: runs.Leave}, err
		case errors.As(err, &other):
			return runs.Outcome{Then: runs.HandOff, Definition: other.Recorded.Digest}, err
		}
		return runs.Outcome{}, err
	}
}
