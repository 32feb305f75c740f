package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/hookbus/hookbus/internal/cli"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/loop/tools"
)

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("loop "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parse parses args, mapping -h to cli.ErrHelp and mistakes to cli.ErrUsage.
func parse(fs *flag.FlagSet, args []string) error { return cli.Parse(fs, args) }

func logger(verbose bool, w io.Writer) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// agentFlags are the flags that build an engine.
type agentFlags struct {
	script   string
	root     string
	system   string
	maxSteps int
	tools    string
}

func (a *agentFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.script, "script", "", "scripted model: a JSON script file (default: the built-in demo script)")
	fs.StringVar(&a.root, "root", ".", "directory the read_file tool is confined to")
	fs.StringVar(&a.system, "system", "", "system prompt")
	fs.IntVar(&a.maxSteps, "max-steps", loop.DefaultMaxSteps, "most steps a run may take")
	fs.StringVar(&a.tools, "tools", "", "comma-separated tools the agent has, by name ("+strings.Join(tools.Names(), ", ")+"); default: clock, calculator, read_file")
}

func (a *agentFlags) engine(em loop.Emitter, h loop.History, hooks loop.Interception, log *slog.Logger) (*loop.Engine, error) {
	script := scripted.Demo()
	if a.script != "" {
		s, err := scripted.Load(a.script)
		if err != nil {
			return nil, err
		}
		script = s
	}
	ts := tools.Builtin(a.root)
	if a.tools != "" {
		var err error
		if ts, err = tools.ByNames(strings.Split(a.tools, ","), tools.Config{Root: a.root}); err != nil {
			return nil, fmt.Errorf("--tools: %w", err)
		}
	}
	return loop.New(loop.Config{
		Emitter: em, History: h, Model: scripted.New(script), Tools: ts,
		Hooks: hooks, SystemPrompt: a.system, MaxSteps: a.maxSteps, Logger: log,
	})
}

func prompt(fs *flag.FlagSet) (string, error) {
	p := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if p == "" {
		return "", fmt.Errorf("%w: no PROMPT given", cli.ErrUsage)
	}
	return p, nil
}
