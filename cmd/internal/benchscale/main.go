package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// config is the command line of a benchmark run.
type config struct {
	loop       string // the loop binary
	goCmd      string // the go command, for go tool pprof
	levels     []int
	modelDelay time.Duration
	window     time.Duration
	satRuns    int
	satConc    int
	top        int
	keep       bool
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchscale:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "interceptor" {
		return runInterceptor(ctx, args[1:], stderr)
	}
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	return bench(ctx, cfg, stdout, stderr)
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("benchscale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.StringVar(&cfg.loop, "loop", "bin/loop", "the loop binary (go build -o bin/ ./cmd/loop)")
	fs.StringVar(&cfg.goCmd, "go", "go", "the go command (for go tool pprof)")
	levels := fs.String("levels", "10,100,1000", "runs kept in flight in the latency phase, comma-separated")
	fs.DurationVar(&cfg.modelDelay, "model-delay", time.Second, "how long the scripted model takes per call in the latency phase")
	fs.DurationVar(&cfg.window, "window", 15*time.Second, "how long each latency level is measured (after a warm-up of two runs' time)")
	fs.IntVar(&cfg.satRuns, "sat-runs", 2000, "runs submitted at once in the saturation phases")
	fs.IntVar(&cfg.satConc, "sat-concurrency", 256, "loop serve --concurrency of each worker in the saturation phases")
	fs.IntVar(&cfg.top, "top", 25, "entries of the worker's CPU profile to print")
	fs.BoolVar(&cfg.keep, "keep", false, "keep the temporary directory (store, logs, profile)")
	if err := fs.Parse(args); err != nil {
		return cfg, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	for _, s := range strings.Split(*levels, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return cfg, fmt.Errorf("%w: --levels: %q is not a positive number of runs", errUsage, s)
		}
		cfg.levels = append(cfg.levels, n)
	}
	switch {
	case cfg.modelDelay < 0:
		return cfg, fmt.Errorf("%w: --model-delay %s is negative", errUsage, cfg.modelDelay)
	case cfg.window < time.Second:
		return cfg, fmt.Errorf("%w: --window %s is shorter than a second", errUsage, cfg.window)
	case cfg.satRuns < 1 || cfg.satConc < 1:
		return cfg, fmt.Errorf("%w: --sat-runs and --sat-concurrency must be at least 1", errUsage)
	}
	if _, err := os.Stat(cfg.loop); err != nil {
		return cfg, fmt.Errorf("%w: --loop %s: %v (build it: go build -o bin/ ./cmd/loop)", errUsage, cfg.loop, err)
	}
	return cfg, nil
}
