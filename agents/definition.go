package agents

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
)

// An agent's definition is what makes its runs what they are: the model
// and how it is called, the instructions, the tools and their settings, the
// MCP servers, the hooks, the bounds, budgets and prices, the approval
// policy, the compaction, and the sub-agents it may call. Its digest is the
// SHA-256 of the canonical JSON below; a worker records it in every
// run.started, so that a resumed attempt runs on the definition its run
// started with (docs/PROTOCOL.md, "Agent definitions").
//
// Left out, on purpose: where the model's key comes from (api_key_env: a
// deployment's secret, not the agent), the routing policy
// (on_definition_change: it says what to do about definitions, it does not
// change one), and the hooks every agent of a worker or of the fleet runs
// (--claude-settings, the registry of interceptors): those are the
// platform's, not the agent's.

// definitionFormat numbers the canonical form; a change to it changes
// every digest, so it is bumped only with the form.
const definitionFormat = 1

// canonical is an agent's definition as hashed: JSON in this field order,
// map keys sorted, durations as Go duration strings, no insignificant
// whitespace, no escaping beyond JSON's own.
type canonical struct {
	Format      int             `json:"format"`
	Name        string          `json:"name"`
	Version     string          `json:"version,omitempty"`
	Description string          `json:"description,omitempty"`
	Model       canonicalModel  `json:"model"`
	System      string          `json:"system,omitempty"`
	Root        string          `json:"root,omitempty"`
	Tools       []string        `json:"tools,omitempty"`
	ToolTimeout string          `json:"tool_timeout,omitempty"`
	Bash        canonicalBash   `json:"bash"`
	MCP         []canonicalMCP  `json:"mcp,omitempty"`
	Hooks       json.RawMessage `json:"hooks,omitempty"`
	MaxSteps    int             `json:"max_steps,omitempty"`
	MaxDepth    int             `json:"max_depth,omitempty"`
	Budget      canonicalBudget `json:"budget"`
	Prices      *canonicalPrice `json:"prices,omitempty"`
	Approval    canonicalApprov `json:"approval"`
	Compaction  canonicalCompac `json:"compaction"`
	// Subagents are the agents this one may call, directly or through
	// them, each with the digest of its own definition without its
	// sub-agents (so calls in a cycle still hash), by id.
	Subagents []canonicalSub `json:"subagents,omitempty"`
}

type canonicalModel struct {
	Provider    string   `json:"provider"`
	Name        string   `json:"name,omitempty"`
	BaseURL     string   `json:"base_url,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
	Timeout     string   `json:"timeout,omitempty"`
	Attempts    int      `json:"attempts,omitempty"`
	// Script is the hex SHA-256 of a scripted model's script file (its
	// name, a path, is then left out).
	Script string `json:"script,omitempty"`
}

type canonicalBash struct {
	Env            []string `json:"env,omitempty"`
	Timeout        string   `json:"timeout,omitempty"`
	MaxOutput      int      `json:"max_output,omitempty"`
	Idempotent     bool     `json:"idempotent,omitempty"`
	Sandbox        string   `json:"sandbox,omitempty"`
	SandboxNetwork bool     `json:"sandbox_network,omitempty"`
}

type canonicalMCP struct {
	Name    string            `json:"name"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Dir     string            `json:"dir,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Timeout string            `json:"timeout,omitempty"`
}

type canonicalApprov struct {
	Tools    []canonicalMatch `json:"tools,omitempty"`
	Expiry   string           `json:"expiry,omitempty"`
	OnExpiry string           `json:"on_expiry,omitempty"`
}

type canonicalMatch struct {
	Tool string `json:"tool"`
	Args string `json:"args,omitempty"`
}

type canonicalBudget struct {
	MaxInputTokens  int     `json:"max_input_tokens,omitempty"`
	MaxOutputTokens int     `json:"max_output_tokens,omitempty"`
	MaxCostUSD      float64 `json:"max_cost_usd,omitempty"`
}

type canonicalPrice struct {
	InputPerMTok  float64 `json:"input_per_mtok"`
	OutputPerMTok float64 `json:"output_per_mtok"`
}

type canonicalCompac struct {
	MaxTokens   int    `json:"max_tokens,omitempty"`
	Keep        int    `json:"keep,omitempty"`
	Instruction string `json:"instruction,omitempty"`
	Fail        bool   `json:"fail,omitempty"`
}

type canonicalSub struct {
	ID     string `json:"id"`
	Digest string `json:"digest"`
}

// Definition returns the agent's definition: its digest (which covers the
// sub-agents it may call), name and version. It reads a scripted model's
// script file; an error wraps ErrBuild naming the agent.
func (a *Agent) Definition() (events.Definition, error) {
	c, err := a.canonical()
	if err != nil {
		return events.Definition{}, err
	}
	reach := a.reachable()
	for _, id := range reach {
		sub := a.file.Agent(id)
		sc, err := sub.canonical()
		if err != nil {
			return events.Definition{}, err
		}
		d, err := digest(sc)
		if err != nil {
			return events.Definition{}, err
		}
		c.Subagents = append(c.Subagents, canonicalSub{ID: id, Digest: d})
	}
	d, err := digest(c)
	if err != nil {
		return events.Definition{}, err
	}
	return events.Definition{Digest: d, Name: a.ID, Version: a.Version}, nil
}

// Policy is what the agent does with a run recorded on another of its
// definitions: loop.DefinitionWait or loop.DefinitionAdopt.
func (a *Agent) Policy() string {
	return cmp.Or(a.OnDefinitionChange, loop.DefinitionWait)
}

// reachable lists, sorted, the ids of the agents a may call, directly or
// through them (a itself left out).
func (a *Agent) reachable() []string {
	seen := map[string]bool{a.ID: true}
	var out []string
	todo := slices.Clone(a.Subagents)
	for len(todo) > 0 {
		id := todo[0]
		todo = todo[1:]
		if seen[id] || a.file == nil || a.file.Agent(id) == nil {
			continue
		}
		seen[id] = true
		out = append(out, id)
		todo = append(todo, a.file.Agent(id).Subagents...)
	}
	slices.Sort(out)
	return out
}

// canonical is the agent's definition without its sub-agents.
func (a *Agent) canonical() (*canonical, error) {
	provider, name, err := SplitModel(a.Model)
	if err != nil {
		return nil, fmt.Errorf("%w: agent %q: model: %v", ErrBuild, a.ID, err)
	}
	c := &canonical{
		Format: definitionFormat, Name: a.ID, Version: a.Version, Description: a.Description,
		Model: canonicalModel{Provider: provider, Name: name, BaseURL: a.BaseURL, MaxTokens: a.MaxTokens,
			Temperature: a.Temperature, Timeout: dur(a.ModelTimeout), Attempts: a.ModelAttempts},
		System: a.System, Root: a.Root, Tools: a.Tools, ToolTimeout: dur(a.ToolTimeout),
		Bash: canonicalBash{Env: a.Bash.Env, Timeout: dur(a.Bash.Timeout), MaxOutput: a.Bash.MaxOutput, Idempotent: a.Bash.Idempotent,
			Sandbox: a.Bash.Sandbox, SandboxNetwork: a.Bash.SandboxNetwork},
		Hooks:    a.Hooks.raw,
		MaxSteps: a.MaxSteps, MaxDepth: a.MaxDepth,
		Budget:     canonicalBudget{MaxInputTokens: a.Budget.MaxInputTokens, MaxOutputTokens: a.Budget.MaxOutputTokens, MaxCostUSD: a.Budget.MaxCostUSD},
		Approval:   canonicalApprov{Expiry: dur(a.Approval.Expiry), OnExpiry: a.Approval.OnExpiry},
		Compaction: canonicalCompac{MaxTokens: a.Compaction.MaxTokens, Keep: a.Compaction.Keep, Instruction: a.Compaction.Instruction, Fail: a.Compaction.Fail},
	}
	if a.Prices != nil {
		c.Prices = &canonicalPrice{InputPerMTok: a.Prices.InputPerMTok, OutputPerMTok: a.Prices.OutputPerMTok}
	}
	for _, m := range a.Approval.Tools {
		c.Approval.Tools = append(c.Approval.Tools, canonicalMatch(m))
	}
	for _, s := range a.MCP {
		c.MCP = append(c.MCP, canonicalMCP{Name: s.Name, Command: s.Command, Args: s.Args, Env: s.Env, Dir: s.Dir,
			URL: s.URL, Headers: s.Headers, Timeout: dur(s.Timeout)})
	}
	if provider == ProviderScripted && name != "demo" {
		path := name
		if !filepath.IsAbs(path) {
			path = filepath.Join(a.dir(), path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%w: agent %q: model %s: %v", ErrBuild, a.ID, a.Model, err)
		}
		sum := sha256.Sum256(b)
		// The script is the model: where its file lies is not.
		c.Model.Name, c.Model.Script = "", hex.EncodeToString(sum[:])
	}
	return c, nil
}

// digest is the hex SHA-256 of c's canonical JSON (HTML characters left
// as they are, no trailing newline).
func digest(c *canonical) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c); err != nil {
		return "", fmt.Errorf("%w: agent %q: definition: %v", ErrBuild, c.Name, err)
	}
	sum := sha256.Sum256(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	return hex.EncodeToString(sum[:]), nil
}

func dur(d Duration) string {
	if d == 0 {
		return ""
	}
	return time.Duration(d).String()
}

// maxVersionLen bounds a definition's version.
const maxVersionLen = 64

// checkVersion refuses a version that cannot be shown on one line.
func checkVersion(v string) error {
	if len(v) > maxVersionLen {
		return fmt.Errorf("%.16q... is %d bytes (max %d)", v, len(v), maxVersionLen)
	}
	for _, r := range v {
		if r <= ' ' || r == 0x7f {
			return fmt.Errorf("%q holds whitespace or a control character", v)
		}
	}
	return nil
}
