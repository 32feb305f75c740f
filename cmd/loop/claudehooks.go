package main

import (
	"fmt"
	"log/slog"

	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/interceptors/claudecode"
	"github.com/hookbus/hookbus/interceptors/command"
	"github.com/hookbus/hookbus/interceptors/httphook"
	"github.com/hookbus/hookbus/internal/cli"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/agents"
)

// loadClaudeSettings reads the --claude-settings files.
func loadClaudeSettings(paths []string, log *slog.Logger) ([]*claudecode.Settings, error) {
	var out []*claudecode.Settings
	for _, p := range paths {
		s, err := claudecode.LoadSettings(p)
		if err != nil {
			return nil, fmt.Errorf("%w: --claude-settings: %v", cli.ErrUsage, err)
		}
		for _, why := range s.Skipped {
			log.Warn("claude settings: hooks not run", "file", p, "hooks", why)
		}
		out = append(out, s)
	}
	return out, nil
}

// claudeHooks registers Claude Code hooks on agents' engines: those of the
// --claude-settings files (every agent) and of each agent's hooks section
// (its own runs), in that order, on a child of the shared chain.
type claudeHooks struct {
	settings    []*claudecode.Settings
	history     loop.History
	log         *slog.Logger
	transcripts *claudecode.TranscriptDir // made when a first agent has hooks
}

// forAgent returns the chain and the emitter of b's engine: the shared
// ones when it runs no Claude Code hook, else a child chain holding them
// and the emitter running the observing ones.
func (c *claudeHooks) forAgent(shared *interceptors.Chain, b *agents.Built, em loop.Emitter) (loop.Interception, loop.Emitter, error) {
	sources := append([]*claudecode.Settings(nil), c.settings...)
	if s := b.Agent.Hooks.Settings; s != nil {
		sources = append(sources, s)
	}
	n := 0
	for _, s := range sources {
		if !s.DisableAllHooks {
			n += len(s.Handlers)
		}
	}
	if n == 0 {
		return shared, em, nil
	}
	if c.transcripts == nil {
		t, err := claudecode.NewTranscripts(c.history, "")
		if err != nil {
			return nil, nil, err
		}
		c.transcripts = t
	}
	chain := shared.Child()
	root := b.Agent.RootDir()
	log := c.log.With("agent", b.Agent.ID)
	registered, err := claudecode.Register(chain, sources, claudecode.Options{Logger: log, Factories: map[string]claudecode.Factory{
		claudecode.TypeCommand: command.Factory(command.Config{Root: root, Transcripts: c.transcripts, Env: b.Agent.Bash.Env, Model: b.Agent.Model, Logger: log}),
		claudecode.TypeHTTP:    httphook.Factory(httphook.Config{Cwd: root, Transcripts: c.transcripts, Model: b.Agent.Model, Logger: log}),
		// The prompt and agent hook types register here when their
		// packages (interceptors/prompt, interceptors/agenthook) provide
		// factories: claudecode.FromRaw(...).
	}})
	if err != nil {
		return nil, nil, fmt.Errorf("agent %s: %w", b.Agent.ID, err)
	}
	return chain, registered.Emitter(em), nil
}

// close removes the transcripts.
func (c *claudeHooks) close() {
	if c.transcripts != nil {
		_ = c.transcripts.Close()
	}
}
