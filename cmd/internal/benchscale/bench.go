package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/nats-io/nats.go/jetstream"
)

// env is the processes of a benchmark run and the driver's connection.
type env struct {
	cfg         config
	dir         string
	url         string
	server      *proc
	interceptor *proc
	d           *driver
	js          jetstream.JetStream
	stderr      io.Writer
}

// results is everything the report prints.
type results struct {
	cfg     config
	levels  []levelResult
	sat     []satResult // 1 worker, then 2 workers
	raw     rawResult
	profile string // go tool pprof -top of the one-worker saturation phase
}

type levelResult struct {
	inFlight int
	runs     int // runs that ended in the window
	ph       *phaseEvents
	use      usage
	failed   int64
}

type satResult struct {
	workers int
	runs    int
	failed  int64
	ph      *phaseEvents
	use     usage
	api     map[string]int // JetStream API requests by operation
	reads   map[string]int // the reads among them, by operation and stream
}

type rawResult struct {
	events int
	failed int
	use    usage
}

func bench(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	dir, err := os.MkdirTemp("", "benchscale-")
	if err != nil {
		return err
	}
	if cfg.keep {
		fmt.Fprintln(stderr, "benchscale: keeping", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	e := &env{cfg: cfg, dir: dir, stderr: stderr}
	defer e.close()
	if err := e.start(ctx); err != nil {
		return err
	}
	res := &results{cfg: cfg}
	if err := e.latency(ctx, res); err != nil {
		return fmt.Errorf("latency phase: %w", err)
	}
	if err := e.saturation(ctx, res); err != nil {
		return fmt.Errorf("saturation phase: %w", err)
	}
	return report(stdout, res)
}

func (e *env) logf(format string, args ...any) {
	fmt.Fprintf(e.stderr, "benchscale: "+format+"\n", args...)
}

// freeAddr returns a loopback address with a free port.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// start starts the server and the interceptor, connects the driver and
// registers the interceptor.
func (e *env) start(ctx context.Context) error {
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	srv, line, err := startProc(ctx, "loop server", filepath.Join(e.dir, "server.log"), "listening on",
		e.cfg.loop, "server", "--store", filepath.Join(e.dir, "store"), "--listen", addr)
	if err != nil {
		return err
	}
	e.server = srv
	_, rest, _ := strings.Cut(line, "listening on ")
	e.url, _, _ = strings.Cut(rest, " ")
	e.logf("nats-server (loop server) on %s, pid %d", e.url, srv.cmd.Process.Pid)

	nc, err := bus.Connect(e.url)
	if err != nil {
		return err
	}
	b, err := bus.New(nc)
	if err != nil {
		nc.Close()
		return err
	}
	e.d, e.js = &driver{b: b, q: runs.New(b), nc: nc}, b.JetStream()
	if err := b.CheckProvisioned(ctx); err != nil {
		return err
	}

	self, err := os.Executable()
	if err != nil {
		return err
	}
	ic, _, err := startProc(ctx, "interceptor", filepath.Join(e.dir, "interceptor.log"), "interceptor: ready", self, "interceptor", "--nats", e.url)
	if err != nil {
		return err
	}
	e.interceptor = ic
	reg := interceptors.Registration{Plugin: plugin, Stage: events.StageToolBefore, Timeout: 20 * time.Second}
	if err := remote.NewRegistry(b).Put(ctx, reg); err != nil {
		return fmt.Errorf("registering the interceptor: %w", err)
	}
	e.logf("interceptor %s on tool.before, pid %d", plugin, ic.cmd.Process.Pid)
	return nil
}

func (e *env) close() {
	if e.d != nil {
		e.d.nc.Close()
	}
	for _, p := range []*proc{e.interceptor, e.server} {
		if p != nil {
			if err := p.stop(); err != nil {
				e.logf("%v", err)
			}
		}
	}
}

// script writes the scripted model of the benchmark runs: a calculator
// call, then the answer, each reply taking delay.
func (e *env) script(name string, delay time.Duration) (string, error) {
	ms := int(delay / time.Millisecond)
	s := scripted.Script{Name: name, Replies: []scripted.Reply{
		{Content: "Let me work it out.", DelayMS: ms, ToolCalls: []scripted.ToolCall{{Name: "calculator", Arguments: json.RawMessage(`{"expression":"6*7"}`)}}},
		{Content: "6*7 = {{tool:calculator}}", DelayMS: ms},
	}}
	b, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	path := filepath.Join(e.dir, name+".json")
	return path, os.WriteFile(path, b, 0o644)
}

// startWorker starts "loop serve" on the server, with extra flags.
func (e *env) startWorker(ctx context.Context, name, script string, concurrency int, extra ...string) (*proc, error) {
	args := append([]string{"serve", "--nats", e.url, "--script", script, "--tools", "calculator",
		"--concurrency", strconv.Itoa(concurrency)}, extra...)
	w, _, err := startProc(ctx, name, filepath.Join(e.dir, name+".log"), "loop serve: taking runs", e.cfg.loop, args...)
	if err != nil {
		return nil, err
	}
	e.logf("%s (loop serve --concurrency %d), pid %d", name, concurrency, w.cmd.Process.Pid)
	return w, nil
}

// latency is phase (a): one worker, the closed loop at each level.
func (e *env) latency(ctx context.Context, res *results) error {
	script, err := e.script("latency", e.cfg.modelDelay)
	if err != nil {
		return err
	}
	most := 0
	var agents []string
	for _, n := range e.cfg.levels {
		most = max(most, n)
		agents = append(agents, fmt.Sprintf("lat%d", n))
	}
	w, err := e.startWorker(ctx, "worker", script, most, "--agent", strings.Join(agents, ","))
	if err != nil {
		return err
	}
	roles := []role{{"worker", w}, {"interceptor", e.interceptor}, {"nats-server", e.server}, {"driver", nil}}
	runTime := 2*e.cfg.modelDelay + 100*time.Millisecond
	type ran struct {
		agent string
		lt    levelTimes
	}
	var done []ran
	for _, n := range e.cfg.levels {
		agent := fmt.Sprintf("lat%d", n)
		e.logf("latency: %d runs in flight for %s after a %s warm-up", n, e.cfg.window, 2*runTime+time.Second)
		lt, err := e.d.closedLoop(ctx, agent, n, runTime, 2*runTime+time.Second, e.cfg.window, roles)
		if err != nil {
			_ = w.stop()
			return fmt.Errorf("%d in flight: %w", n, err)
		}
		done = append(done, ran{agent, lt})
	}
	if err := w.stop(); err != nil {
		return err
	}
	for i, r := range done {
		ph, err := readPhase(ctx, e.js, e.d.b.Names().Events, e.d.evtPrefix(), r.agent, plugin, r.lt.from.at, r.lt.to.at, false)
		if err != nil {
			return err
		}
		res.levels = append(res.levels, levelResult{inFlight: e.cfg.levels[i], runs: ph.runsEnded, ph: ph, use: since(roles, r.lt.from, r.lt.to), failed: r.lt.failed})
	}
	return nil
}

// saturation is phase (b) and (c): bursts of runs with no model delay on
// one worker (profiled) and on two, and the raw baseline.
func (e *env) saturation(ctx context.Context, res *results) error {
	script, err := e.script("saturation", 0)
	if err != nil {
		return err
	}
	names := e.d.b.Names()
	profile := filepath.Join(e.dir, "worker.pprof")
	for _, workers := range []int{1, 2} {
		var ws []*proc
		stopAll := func() error {
			var first error
			for _, w := range ws {
				if err := w.stop(); err != nil && first == nil {
					first = err
				}
			}
			return first
		}
		for i := range workers {
			extra := []string{"--agent", fmt.Sprintf("sat%d", workers)}
			if workers == 1 {
				extra = append(extra, "--cpuprofile", profile)
			}
			w, err := e.startWorker(ctx, fmt.Sprintf("sat%d-worker%d", workers, i+1), script, e.cfg.satConc, extra...)
			if err != nil {
				_ = stopAll()
				return err
			}
			ws = append(ws, w)
		}
		roles := []role{}
		for i, w := range ws {
			roles = append(roles, role{fmt.Sprintf("worker%d", i+1), w})
		}
		roles = append(roles, role{"interceptor", e.interceptor}, role{"nats-server", e.server}, role{"driver", nil})
		agent := fmt.Sprintf("sat%d", workers)
		e.logf("saturation: %d runs at once, %d worker(s)", e.cfg.satRuns, workers)
		api, err := countAPI(e.d.nc)
		if err != nil {
			_ = stopAll()
			return err
		}
		from, to, failed, err := e.d.burst(ctx, agent, e.cfg.satRuns, roles)
		apiOps, apiReads := api.stop()
		if err != nil {
			_ = stopAll()
			return fmt.Errorf("%d worker(s): %w", workers, err)
		}
		if err := stopAll(); err != nil {
			return err
		}
		ph, err := readPhase(ctx, e.js, names.Events, e.d.evtPrefix(), agent, plugin, from.at.Add(-time.Second), to.at.Add(time.Minute), workers == 1)
		if err != nil {
			return err
		}
		res.sat = append(res.sat, satResult{workers: workers, runs: e.cfg.satRuns, failed: failed, ph: ph, use: since(roles, from, to), api: apiOps, reads: apiReads})
		if workers == 1 {
			if res.raw, err = e.raw(ctx, ph); err != nil {
				return fmt.Errorf("raw baseline: %w", err)
			}
			ph.msgs = nil
			top, err := pprofTop(e.cfg.goCmd, e.cfg.loop, profile, e.cfg.top, false)
			if err != nil {
				return err
			}
			cum, err := pprofTop(e.cfg.goCmd, e.cfg.loop, profile, e.cfg.top, true)
			if err != nil {
				return err
			}
			res.profile = top + "\n" + cum
		}
	}
	return nil
}

// raw publishes the one-worker phase's messages again with raw nats.go.
func (e *env) raw(ctx context.Context, ph *phaseEvents) (rawResult, error) {
	if err := createRawStream(ctx, e.js, e.d.b.Names().Events); err != nil {
		return rawResult{}, err
	}
	msgs := rawMessages(ph.msgs)
	js, err := jetstream.New(e.d.nc)
	if err != nil {
		return rawResult{}, err
	}
	roles := []role{{"publisher", nil}, {"nats-server", e.server}}
	e.logf("raw baseline: %d messages with jetstream PublishMsgAsync", len(msgs))
	from := takeSample(roles)
	failed, err := rawPublish(js, msgs)
	to := takeSample(roles)
	if err != nil {
		return rawResult{}, err
	}
	return rawResult{events: len(msgs), failed: failed, use: since(roles, from, to)}, nil
}
