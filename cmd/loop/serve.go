package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/internal/cli"
	"github.com/hookbus/hookbus/internal/httpauth"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/telemetry"
)

func cmdServe(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := newFlagSet("serve", stderr)
	conn := cli.ConnFlags{Embeds: true}
	conn.Register(fs)
	var af agentFlags
	af.register(fs)
	concurrency := fs.Int("concurrency", 4, "runs in flight at once, whatever their agent (with at least as many as agents served, a new run is taken at once; with fewer, within about 100ms per agent)")
	agentsFlag := fs.String("agents", "", "an agent definitions file (FILE.yaml): serve its agents, each on its definition")
	var ids []string
	fs.Func("agent", "an agent id to serve with the agent the flags define (--model, --tools, ...); repeatable or comma-separated (default: demo). Requests of other agents are left to the workers that serve them", func(v string) error {
		for _, a := range strings.Split(v, ",") {
			if err := events.ValidateID("agent", a); err != nil {
				return err
			}
			ids = append(ids, a)
		}
		return nil
	})
	replace := fs.Bool("replace-definition", false, "make this worker's definitions the ones the fleet runs new runs on, even where another worker registered another (a deploy); workers with the old one then take only runs recorded on it")
	lease := fs.Duration("lease", runs.DefaultAckWait, "how long a run may go without a sign of life from its worker before another worker takes it over (the same for every worker of the pool)")
	verbose := fs.Bool("v", false, cli.VerboseHelp+"; every run is logged")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the worker to FILE when it stops (go tool pprof; make bench-scale uses it)")
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics of this worker's runs at http://ADDR/metrics (e.g. 127.0.0.1:9464); off loopback give --metrics-token-file and --metrics-public-url")
	metricsAuth := httpauth.Flags{Prefix: "metrics-"}
	metricsAuth.Register(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: loop serve [flags]\n\nTakes run requests of the agents it serves from the HOOKBUS_RUNS work queue until\ninterrupted: those of an agent definitions file (--agents FILE), or of the agent ids\nthe flags define (--agent, default demo). Start several to share the queue; a request\nfor an agent no worker serves waits for one. An agent's new runs run on the definition\nthe fleet registered for it (the first worker to serve it registers its own); a run\ngoes on with the definition it started on.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", cli.ErrUsage, fs.Arg(0))
	}
	if *lease < time.Second {
		return fmt.Errorf("%w: --lease %s is shorter than a second", cli.ErrUsage, *lease)
	}
	if *concurrency < 1 {
		return fmt.Errorf("%w: --concurrency %d must be at least 1", cli.ErrUsage, *concurrency)
	}
	if *cpuprofile != "" {
		stop, err := startCPUProfile(*cpuprofile)
		if err != nil {
			return err
		}
		defer stop()
	}
	switch {
	case *agentsFlag != "" && !isAgentsFile(*agentsFlag):
		return fmt.Errorf("%w: --agents %q is not an agent definitions file (FILE.yaml); to serve agent ids with the agent the flags define, give --agent %s", cli.ErrUsage, *agentsFlag, *agentsFlag)
	case *agentsFlag != "" && len(ids) > 0:
		return fmt.Errorf("%w: --agent names the agent ids the flags define; with --agents FILE the file names them", cli.ErrUsage)
	case *agentsFlag != "":
		af.file = *agentsFlag
	case len(ids) == 0:
		ids = []string{defaultAgent}
	}
	if err := af.check(cli.Set(fs)); err != nil {
		return err
	}
	defs, err := af.definitions(ids...)
	if err != nil {
		return err
	}
	log := cli.Logger(*verbose, stderr)
	signer, err := loadSigner(af.signing)
	if err != nil {
		return err
	}
	claude, err := loadClaudeSettings(af.claude, log)
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
	hooks, stopHooks, err := syncHooks(ctx, c.Bus, log)
	if err != nil {
		return err
	}
	defer stopHooks()
	em, handle := loop.Emitter(c.Bus), func(h runs.Handler) runs.Handler { return h }
	if *metricsAddr != "" {
		m := telemetry.NewMetrics()
		ln, err := metricsAuth.Listen(*metricsAddr, httpauth.Options{Name: "loop serve --metrics", Logger: log})
		if err != nil {
			return fmt.Errorf("%w: --metrics: %w", cli.ErrUsage, err)
		}
		telemetry.ServeMetrics(ctx, ln, m)
		follow, err := m.FollowApprovals(ctx, c.Bus)
		if err != nil {
			return fmt.Errorf("metrics: read the approvals: %w", err)
		}
		go func() {
			if err := <-follow; err != nil {
				log.Warn("loop serve: the approvals gauge stopped following the stream", "err", err)
			}
		}()
		em, handle = m.Emitter(c.Bus), m.RunHandler
		fmt.Fprintf(stderr, "loop serve: metrics on %smetrics\n", ln.URL())
	}
	q := runs.New(c.Bus)
	engs, closeHooks, err := engines(built, engineDeps{em: em, h: c.Bus, q: q, hooks: hooks, budget: sharedBudget(ctx, c.Bus, log),
		claude: claude, cache: remote.NewDecisionCache(c.Bus), signer: signer, log: log})
	if err != nil {
		return err
	}
	defer closeHooks()
	source := "flags"
	if af.file != "" {
		source = af.file
	}
	served := make([]runs.ServedAgent, len(built))
	for i, b := range built {
		served[i] = runs.ServedAgent{ID: b.Agent.ID, Definition: b.Config.Definition, Source: source,
			Replace: *replace, Adopt: b.Config.OnDefinitionChange == loop.DefinitionAdopt}
	}
	w := loop.NewAgentsWorker(engs, log)
	rc, err := q.Consume(ctx, runs.ConsumerConfig{Agents: served, Concurrency: *concurrency, AckWait: *lease}, handle(w.Handle))
	if err != nil {
		return c.Explain(err)
	}
	stopResumer, err := startResumer(ctx, c.Bus, served, log)
	if err != nil {
		rc.Stop()
		return err
	}
	defer stopResumer()
	printRoutes(stderr, rc.Routes())
	fmt.Fprintf(stderr, "loop serve: taking runs for %s, %d at a time (%s)\n", describeRoutes(rc.Routes()), *concurrency, c.Where)
	<-ctx.Done()
	fmt.Fprintln(stderr, "loop serve: draining")
	rc.Drain()
	select {
	case <-rc.Closed():
	case <-time.After(30 * time.Second):
		fmt.Fprintln(stderr, "loop serve: runs still in flight after 30s; they will be redelivered")
	}
	return nil
}

func cmdSubmit(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("submit", stderr)
	conn := cli.ConnFlags{}
	conn.Register(fs)
	var pf promptFlags
	pf.register(fs)
	agent := fs.String("agent", defaultAgent, "agent id")
	session := fs.String("session", "", "session id (default: a new one)")
	maxSteps := fs.Int("max-steps", 0, "most steps, at least 1 (default: the worker's)")
	wait := fs.Bool("wait", false, "wait for the run to end and print its answer")
	timeout := fs.Duration("timeout", 5*time.Minute, "with --wait: how long to wait")
	verbose := fs.Bool("v", false, cli.VerboseHelp)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: loop submit [flags] PROMPT | - | --prompt-file FILE\n\nEnqueues a run request on hookbus.run.<agent> for the workers (loop serve).\nA prompt of any size: a request over the server's max payload travels in the\npayloads object store, as large events do.\n\nFlags:")
		fs.PrintDefaults()
	}
	pos, err := cli.ParseInterspersed(fs, args)
	if err != nil {
		return exitUsage, err
	}
	set := cli.Set(fs)
	if set["max-steps"] && *maxSteps < 1 {
		return exitUsage, fmt.Errorf("%w: --max-steps %d: a run takes at least 1 step (leave it out for the worker's)", cli.ErrUsage, *maxSteps)
	}
	if *timeout <= 0 {
		return exitUsage, fmt.Errorf("%w: --timeout %s: give a positive duration", cli.ErrUsage, *timeout)
	}
	if set["timeout"] && !*wait {
		return exitUsage, fmt.Errorf("%w: --timeout is how long --wait waits: give --wait too", cli.ErrUsage)
	}
	p, err := pf.read(pos, stdin)
	if err != nil {
		return exitUsage, err
	}
	if *session == "" {
		*session = events.NewID()
	}
	req := &events.RunRequest{RunID: events.NewID(), AgentID: *agent, SessionID: *session, Prompt: p, MaxSteps: *maxSteps, SubmittedAt: time.Now().UTC()}
	if err := req.Validate(); err != nil {
		return exitUsage, fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	c, err := conn.Open(ctx, "hookbus-submit", cli.Logger(*verbose, stderr), cli.ReadOnly)
	if err != nil {
		return exitFailure, err
	}
	defer c.Close()
	gctx, stop := c.Guard(ctx)
	defer stop()
	if err := runs.New(c.Bus).Submit(gctx, req); err != nil {
		return exitFailure, c.Explain(err)
	}
	fmt.Fprintf(stderr, "submitted run %s session %s agent %s\n", req.RunID, req.SessionID, req.AgentID)
	if !*wait {
		fmt.Fprintln(stdout, req.RunID)
		return exitOK, nil
	}
	wctx, cancel := context.WithTimeout(gctx, *timeout)
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
