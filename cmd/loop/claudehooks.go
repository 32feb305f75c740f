package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hookbus/hookbus/events"

	"github.com/hookbus/hookbus/agents"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/hooks/agenthook"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/hooks/command"
	"github.com/hookbus/hookbus/hooks/httphook"
	"github.com/hookbus/hookbus/hooks/mcptool"
	"github.com/hookbus/hookbus/hooks/prompt"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
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
	cache       prompt.Cache // prompt hooks' decisions, shared by workers (nil: none)
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
		t, err := claudecode.NewTranscripts(loop.Conversations{History: c.history}, "")
		if err != nil {
			return nil, nil, err
		}
		c.transcripts = t
	}
	chain := shared.Child()
	root := b.Agent.RootDir()
	log := c.log.With("agent", b.Agent.ID)
	lh := &llmHooks{agent: b, emitter: em, history: c.history, cache: c.cache, transcripts: c.transcripts, log: log}
	registered, err := claudecode.Register(chain, sources, claudecode.Options{Logger: log, Factories: map[string]claudecode.Factory{
		claudecode.TypeCommand: command.Factory(command.Config{Root: root, Transcripts: c.transcripts, Env: b.Agent.Bash.Env, Model: b.Agent.Model, Logger: log}),
		claudecode.TypeHTTP:    httphook.Factory(httphook.Config{Cwd: root, Transcripts: c.transcripts, Model: b.Agent.Model, Logger: log}),
		claudecode.TypeMCPTool: mcptool.Factory(mcptool.Config{Servers: b.MCP, Cwd: root, Transcripts: c.transcripts, Model: b.Agent.Model, Logger: log}),
		claudecode.TypePrompt:  lh.promptFactory,
		claudecode.TypeAgent:   lh.agentFactory,
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

// llmHooks makes the prompt and agent hooks of an agent's Claude Code
// settings: a model call or a read-only sub-agent, on the handler's model
// or the agent's.
type llmHooks struct {
	agent       *agents.Built
	emitter     loop.Emitter
	history     loop.History
	cache       prompt.Cache
	transcripts *claudecode.TranscriptDir
	log         *slog.Logger
}

// llmHandler is a prompt or agent handler of a settings file, with Claude
// Code's fields.
type llmHandler struct {
	Type   string `json:"type"`
	Prompt string `json:"prompt"`
	// Model is Claude Code's model field: provider:name as in an agents
	// file, or a bare name, which is Anthropic's.
	Model   string   `json:"model"`
	Timeout *float64 `json:"timeout"`
	// Read and ignored: how Claude Code shows or repeats a hook.
	StatusMessage string `json:"statusMessage"`
	Once          bool   `json:"once"`

	// model is the model Model names, resolved, and modelName its name.
	model     loop.Model
	modelName string
}

// parse reads the handler's object strictly (an unknown field is refused,
// naming it) and resolves the model it names.
func (l *llmHooks) parse(h claudecode.Handler) (*llmHandler, error) {
	var lh llmHandler
	if err := claudecode.DecodeHandler(h.Raw, h.Type, &lh); err != nil {
		return nil, err
	}
	if lh.Prompt == "" {
		return nil, fmt.Errorf("%s handler has no prompt", h.Type)
	}
	var err error
	if lh.model, lh.modelName, err = l.model(lh.Model); err != nil {
		return nil, err
	}
	return &lh, nil
}

// model returns the model a handler names (spec), resolved as an agents
// file resolves provider:name (a bare name is Anthropic's, as in Claude
// Code), or the agent's own model when spec is empty.
func (l *llmHooks) model(spec string) (loop.Model, string, error) {
	a := l.agent.Agent
	if spec == "" {
		return l.agent.Config.Model, a.Model, nil
	}
	if !strings.Contains(spec, ":") {
		spec = agents.ProviderAnthropic + ":" + spec
	}
	provider, _, err := agents.SplitModel(spec)
	if err != nil {
		return nil, "", fmt.Errorf("model: %v", err)
	}
	// The agent's definition with the handler's model: its base URL, key
	// variable and limits apply when the provider is the agent's own.
	def := *a
	def.Model, def.Tools, def.MCP, def.Subagents = spec, nil, nil, nil
	if agentProvider, _, _ := agents.SplitModel(a.Model); agentProvider != provider {
		def.BaseURL, def.APIKeyEnv, def.MaxTokens, def.Temperature = "", "", 0, nil
	}
	b, err := def.Build(context.Background(), l.log)
	if err != nil {
		return nil, "", err
	}
	return b.Config.Model, spec, nil
}

// input is the $ARGUMENTS of a handler's hooks: Claude Code's hook input of
// its event, as a command hook reads it.
func (l *llmHooks) input(event claudecode.HookEvent) func(*events.Event) (json.RawMessage, error) {
	root := l.agent.Agent.RootDir()
	return func(ev *events.Event) (json.RawMessage, error) {
		env := claudecode.Env{Cwd: root, Model: l.agent.Agent.Model}
		if l.transcripts != nil {
			ctx, cancel := context.WithTimeout(context.Background(), transcriptTimeout)
			claudecode.FillTranscripts(ctx, l.transcripts, event, ev, &env, l.log)
			cancel()
		}
		in, err := claudecode.NewInput(event, ev, env)
		if err != nil {
			return nil, err
		}
		return json.Marshal(in)
	}
}

// transcriptTimeout bounds the writing of a prompt or agent hook's
// transcript.
const transcriptTimeout = 5 * time.Second

// promptFactory is the claudecode.Factory of "prompt" handlers.
func (l *llmHooks) promptFactory(h claudecode.Handler, reg interceptors.Registration) (interceptors.Interceptor, error) {
	lh, err := l.parse(h)
	if err != nil {
		return nil, err
	}
	return prompt.New(prompt.Config{Prompt: lh.Prompt, Model: lh.model, ModelName: lh.modelName, Timeout: h.Timeout,
		Input: l.input(h.Event), Cache: l.cache})
}

// agentFactory is the claudecode.Factory of "agent" handlers: the
// sub-agent reads the agent's root with Claude Code's read-only tools,
// and its run is recorded on the loop's emitter.
func (l *llmHooks) agentFactory(h claudecode.Handler, reg interceptors.Registration) (interceptors.Interceptor, error) {
	lh, err := l.parse(h)
	if err != nil {
		return nil, err
	}
	return agenthook.New(agenthook.Config{Prompt: lh.Prompt, Model: lh.model, ModelName: lh.modelName, Timeout: h.Timeout,
		Emitter: l.emitter, History: l.history, Root: l.agent.Agent.RootDir(), AgentID: reg.Plugin,
		Input: l.input(h.Event), Logger: l.log})
}
