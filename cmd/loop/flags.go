package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/hookbus/hookbus/agents"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/hooks/prompt"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/spf13/pflag"
)

// agentFlags are the flags that say which agents to run: an agent
// definitions file (--agents FILE), or one agent made of flags.
type agentFlags struct {
	file     string   // --agents FILE
	claude   []string // --claude-settings FILE, repeatable
	signing  string   // --signing-key FILE
	model    string
	tools    string
	script   string
	root     string
	system   string
	maxSteps int
	sandbox  string // --sandbox: the Bash tool's
	sandNet  bool   // --sandbox-network
}

func (a *agentFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&a.model, "model", "", "the model, provider:name: openai:gpt-4.1-mini (key in $OPENAI_API_KEY, base URL in $OPENAI_BASE_URL), anthropic:claude-sonnet-4-5 ($ANTHROPIC_API_KEY), scripted:FILE; default: the scripted demo")
	fs.StringVar(&a.tools, "tools", "", "comma-separated tools the agent may use (Bash, Read, Write, Edit, Glob, Grep, clock, calculator, read_file); default: clock, calculator, read_file")
	fs.StringVar(&a.script, "script", "", "scripted model: a JSON script file (the same as --model scripted:FILE)")
	fs.StringVar(&a.root, "root", ".", "directory the file tools are confined to, and Bash runs in")
	fs.StringVar(&a.system, "system", "", "system prompt")
	fs.IntVar(&a.maxSteps, "max-steps", loop.DefaultMaxSteps, "most steps a run may take (at least 1)")
	fs.StringVar(&a.sandbox, "sandbox", "", "confine Bash commands: none (the default: unconfined), bubblewrap or required (each command under bubblewrap: the root read-write, system directories read-only, nothing else of the file system, no network; loop refuses to start where bubblewrap is missing or does not work)")
	fs.BoolVar(&a.sandNet, "sandbox-network", false, "give sandboxed Bash commands the network (with --sandbox)")
	fs.StringVar(&a.signing, "signing-key", "", "an nkey seed file (\"loop keygen\" writes one) that signs the end of every run, the head of its hash chain (observer verify --public-key checks it)")
	fs.Func("claude-settings", "a Claude Code settings `FILE` (settings.json) whose hooks section every agent runs (command and http hooks, in the file's order); repeatable", func(v string) error {
		a.claude = append(a.claude, v)
		return nil
	})
}

// check refuses what the flags cannot mean; set is cli.Set of the flag set.
func (a *agentFlags) check(set map[string]bool) error {
	if a.maxSteps < 1 {
		return fmt.Errorf("%w: --max-steps %d: a run takes at least 1 step", cli.ErrUsage, a.maxSteps)
	}
	if a.file != "" && set["max-steps"] {
		return fmt.Errorf("%w: --max-steps defines an agent; with --agents FILE the file does (max_steps)", cli.ErrUsage)
	}
	if a.file != "" && (set["sandbox"] || set["sandbox-network"]) {
		return fmt.Errorf("%w: --sandbox and --sandbox-network define an agent; with --agents FILE the file does (bash: {sandbox: ..., sandbox_network: ...})", cli.ErrUsage)
	}
	return nil
}

// isAgentsFile reports whether an --agents value names a definitions file
// rather than a list of agent ids.
func isAgentsFile(v string) bool {
	if strings.HasSuffix(v, ".yaml") || strings.HasSuffix(v, ".yml") {
		return true
	}
	st, err := os.Stat(v)
	return err == nil && !st.IsDir()
}

// definitions returns the agents to run: those of --agents FILE, or the
// agent the flags make, under each of ids.
func (a *agentFlags) definitions(ids ...string) (*agents.File, error) {
	if a.file != "" {
		f, err := agents.Load(a.file)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", cli.ErrUsage, err)
		}
		if a.model != "" || a.tools != "" || a.script != "" || a.system != "" {
			return nil, fmt.Errorf("%w: --model, --tools, --script and --system define an agent; with --agents FILE the file does", cli.ErrUsage)
		}
		return f, nil
	}
	def := agents.Agent{Model: a.model, System: a.system, MaxSteps: a.maxSteps, Root: a.root,
		Bash: agents.Bash{Sandbox: a.sandbox, SandboxNetwork: a.sandNet}}
	switch {
	case a.model != "" && a.script != "":
		return nil, fmt.Errorf("%w: give --model or --script, not both", cli.ErrUsage)
	case a.script != "":
		def.Model = "scripted:" + a.script
	}
	if file, ok := strings.CutPrefix(def.Model, "scripted:"); ok && file != "demo" {
		// A mistake in the script is the command line's: exit 2.
		if _, err := scripted.Load(file); err != nil {
			return nil, fmt.Errorf("%w: %v", cli.ErrUsage, err)
		}
	}
	def.Model = cmp.Or(def.Model, "scripted:demo")
	if a.tools != "" {
		for _, t := range strings.Split(a.tools, ",") {
			def.Tools = append(def.Tools, strings.TrimSpace(t))
		}
	} else {
		def.Tools = []string{"clock", "calculator", "read_file"}
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	f := &agents.File{Path: filepath.Join(wd, "flags")}
	for _, id := range ids {
		def.ID = id
		d, err := agents.Define(def, wd, "flags")
		if err != nil {
			return nil, fmt.Errorf("%w: %v", cli.ErrUsage, err)
		}
		f.Agents = append(f.Agents, d)
	}
	return f, nil
}

// build builds each agent (its model, tools and MCP servers), before any
// bus is opened, so that an agent that cannot be built starts and writes
// nothing; closeAll closes what they hold (MCP servers).
func build(ctx context.Context, f *agents.File, log *slog.Logger) (built []*agents.Built, closeAll func(), err error) {
	built, err = f.BuildAll(ctx, log)
	if err != nil {
		return nil, nil, err
	}
	return built, func() {
		for _, b := range built {
			_ = b.Close()
		}
	}, nil
}

// engineDeps are what the engines of all agents share.
type engineDeps struct {
	em     loop.Emitter
	h      loop.History
	q      loop.Queue
	hooks  *interceptors.Chain
	budget loop.SharedBudget      // shared budgets (nil: none)
	claude []*claudecode.Settings // --claude-settings files
	cache  prompt.Cache           // prompt hooks' decisions (nil: none)
	signer loop.Signer            // signs the ends of runs (nil: unsigned)
	worker *events.Worker         // recorded in run.started (nil: none)
	log    *slog.Logger
}

// engines makes the engine of each built agent, on a team so that they can
// call each other as sub-agents; closeHooks closes what their Claude Code
// hooks hold (transcripts). An agent that runs Claude Code hooks (claude,
// then its own hooks section) gets a child of hooks holding them.
func engines(built []*agents.Built, d engineDeps) (map[string]*loop.Engine, func(), error) {
	cc := &claudeHooks{settings: d.claude, history: d.h, cache: d.cache, log: d.log}
	out := make(map[string]*loop.Engine, len(built))
	team := loop.NewTeam()
	for _, b := range built {
		cfg := b.Config
		agentHooks, agentEm, err := cc.forAgent(d.hooks, b, d.em)
		if err != nil {
			cc.close()
			return nil, nil, err
		}
		cfg.Emitter, cfg.History, cfg.Queue, cfg.Hooks, cfg.Logger, cfg.Team = agentEm, d.h, d.q, agentHooks, d.log, team
		cfg.SharedBudget, cfg.Signer, cfg.Worker = d.budget, d.signer, d.worker
		eng, err := loop.New(cfg)
		if err != nil {
			cc.close()
			return nil, nil, fmt.Errorf("agent %s: %w", b.Agent.ID, err)
		}
		out[b.Agent.ID] = eng
		team.Add(b.Agent.ID, eng)
	}
	return out, cc.close, nil
}
