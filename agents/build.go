package agents

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/anthropic"
	"github.com/hookbus/hookbus/loop/mcp"
	"github.com/hookbus/hookbus/loop/openai"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/loop/tools"
)

// Providers a model may name.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
	ProviderScripted  = "scripted"
)

// SplitModel splits "provider:name" and checks the provider is known.
func SplitModel(spec string) (provider, name string, err error) {
	provider, name, ok := strings.Cut(spec, ":")
	switch {
	case spec == "":
		return "", "", errors.New("no model (want provider:name, like openai:gpt-4.1-mini)")
	case !ok || name == "":
		return "", "", fmt.Errorf("%q is not provider:name (like openai:gpt-4.1-mini, anthropic:claude-sonnet-4-5, scripted:demo)", spec)
	}
	switch provider {
	case ProviderOpenAI, ProviderAnthropic, ProviderScripted:
		return provider, name, nil
	}
	return "", "", fmt.Errorf("unknown model provider %q in %q (known: openai, anthropic, scripted)", provider, spec)
}

// Built is an agent made ready to run: the parts of a loop.Config it
// defines, and what to close when the worker stops.
type Built struct {
	Agent  *Agent
	Config loop.Config
	// MCP are the agent's MCP servers, connected.
	MCP mcp.Servers
}

// Close closes the agent's MCP servers.
func (b *Built) Close() error {
	if b == nil || b.MCP == nil {
		return nil
	}
	return b.MCP.Close()
}

// Build makes the agent's model, tools and MCP connections, and returns
// the loop.Config they give (Emitter, History, Hooks and Logger are the
// caller's to set). Errors wrap ErrBuild and name the agent and part.
func (a *Agent) Build(ctx context.Context, log *slog.Logger) (*Built, error) {
	log = cmp.Or(log, slog.New(slog.DiscardHandler))
	model, err := a.model()
	if err != nil {
		return nil, fmt.Errorf("%w: agent %q: model %s: %v", ErrBuild, a.ID, a.Model, err)
	}
	root := a.RootDir()
	var ts []loop.Tool
	if len(a.Tools) > 0 {
		if st, err := os.Stat(root); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("%w: agent %q: root %s is not a directory", ErrBuild, a.ID, root)
		}
		ts, err = tools.ByNames(a.Tools, tools.Config{Root: root, Bash: a.bashConfig()})
		if err != nil {
			return nil, fmt.Errorf("%w: agent %q: tools: %v", ErrBuild, a.ID, err)
		}
	}
	def, err := a.Definition()
	if err != nil {
		return nil, err
	}
	b := &Built{Agent: a}
	if len(a.MCP) > 0 {
		cfgs := make([]mcp.ServerConfig, len(a.MCP))
		for i, s := range a.MCP {
			cfgs[i] = s.config(a.dir())
		}
		b.MCP, err = mcp.ConnectAll(ctx, cfgs, mcp.WithLogger(log.With("agent", a.ID)))
		if err != nil {
			return nil, fmt.Errorf("%w: agent %q: mcp: %v", ErrBuild, a.ID, err)
		}
		ts = append(ts, b.MCP.Tools()...)
	}
	b.Config = loop.Config{
		Model: model, Tools: ts, SystemPrompt: a.System, MaxSteps: a.MaxSteps,
		ModelTimeout: time.Duration(a.ModelTimeout), ModelRetry: loop.Retry{Attempts: a.ModelAttempts},
		Budget: a.budget(), ToolTimeout: time.Duration(a.ToolTimeout),
		Definition: def, OnDefinitionChange: a.Policy(),
	}
	b.Config.Approval, _ = a.approval() // checked by Parse
	for _, id := range a.Subagents {
		sub := a.file.Agent(id)
		desc := ""
		if sub != nil {
			desc = sub.Description
		}
		b.Config.Subagents = append(b.Config.Subagents, loop.Subagent{ID: id, Description: desc})
	}
	b.Config.MaxDepth = a.MaxDepth
	b.Config.Compaction = loop.Compaction{MaxTokens: a.Compaction.MaxTokens, Keep: a.Compaction.Keep,
		Instruction: a.Compaction.Instruction, Fail: a.Compaction.Fail}
	if a.Prices != nil {
		b.Config.Prices = &events.Prices{InputPerMTok: a.Prices.InputPerMTok, OutputPerMTok: a.Prices.OutputPerMTok}
	}
	return b, nil
}

// bashConfig is the agent's Bash tool: its settings, its timeouts capped by
// tool_timeout (a command is killed by its own timeout before the engine
// gives up on the call).
func (a *Agent) bashConfig() tools.BashConfig {
	c := tools.BashConfig{
		Env: a.Bash.Env, Timeout: time.Duration(a.Bash.Timeout), MaxOutput: a.Bash.MaxOutput, Idempotent: a.Bash.Idempotent,
		Sandbox: a.Bash.Sandbox, SandboxNetwork: a.Bash.SandboxNetwork,
	}
	if tt := time.Duration(a.ToolTimeout); tt > 0 {
		c.MaxTimeout = min(tools.DefaultBashMaxTimeout, tt)
		c.Timeout = cmp.Or(c.Timeout, min(tools.DefaultBashTimeout, c.MaxTimeout))
	}
	return c
}

// RootDir is the agent's root directory: relative paths of its file tools
// start there, Bash and its command hooks run there. A relative root is
// taken from the agent's file.
func (a *Agent) RootDir() string {
	r := a.Root
	if r == "" {
		return a.dir()
	}
	if filepath.IsAbs(r) {
		return r
	}
	return filepath.Join(a.dir(), r)
}

// model makes the agent's model.
func (a *Agent) model() (loop.Model, error) {
	provider, name, err := SplitModel(a.Model)
	if err != nil {
		return nil, err
	}
	key := func(def string) string {
		env := cmp.Or(a.APIKeyEnv, def)
		return os.Getenv(env)
	}
	switch provider {
	case ProviderOpenAI:
		return openai.New(openai.Config{Model: name, BaseURL: a.BaseURL, APIKey: key("OPENAI_API_KEY"),
			MaxTokens: a.MaxTokens, Temperature: a.Temperature})
	case ProviderAnthropic:
		return anthropic.New(anthropic.Config{Model: name, BaseURL: a.BaseURL, APIKey: key("ANTHROPIC_API_KEY"),
			MaxTokens: a.MaxTokens, Temperature: a.Temperature})
	default: // scripted
		if name == "demo" {
			return scripted.New(scripted.Demo()), nil
		}
		path := name
		if !filepath.IsAbs(path) {
			path = filepath.Join(a.dir(), path)
		}
		s, err := scripted.Load(path)
		if err != nil {
			return nil, err
		}
		return scripted.New(s), nil
	}
}

// BuildAll builds every agent of the file; on a failure it closes those it
// built.
func (f *File) BuildAll(ctx context.Context, log *slog.Logger) ([]*Built, error) {
	var out []*Built
	for _, a := range f.Agents {
		b, err := a.Build(ctx, log)
		if err != nil {
			for _, o := range out {
				_ = o.Close()
			}
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}
