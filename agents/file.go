package agents

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/mcp"
	"github.com/hookbus/hookbus/loop/tools"
	"go.yaml.in/yaml/v3"
)

// File is an agent definitions file: the agents a worker serves.
type File struct {
	// Agents are the file's agents, in the file's order.
	Agents []*Agent `yaml:"agents"`
	// Path is where the file was read from ("" for Parse without a name);
	// relative paths in it (root, scripted:FILE) are relative to its
	// directory.
	Path string `yaml:"-"`
}

// Agent is one agent: its model, its instructions, what it may use and how
// much.
type Agent struct {
	// ID is the agent id (a subject token): runs of the agent are
	// requested on <prefix>.run.<id> and recorded under its events.
	ID string `yaml:"id"`
	// Version is the definition's version, as its author numbers it
	// ("3", "1.4.0"). A worker whose definition of the agent has a newer
	// version than the one the fleet registered replaces it when it
	// starts (docs/PROTOCOL.md, "Agent definitions").
	Version string `yaml:"version"`
	// OnDefinitionChange is what this definition does with a run of the
	// agent recorded on another definition (a deploy between two attempts
	// of a run): "wait" (the default) leaves it to a worker holding the
	// run's definition; "adopt" lets this definition go on with it, and
	// its run.started records both definitions.
	OnDefinitionChange string `yaml:"on_definition_change"`
	// Description says what the agent is for (shown to a parent agent
	// that may call it).
	Description string `yaml:"description"`
	// Model names the model as provider:name: "openai:gpt-4.1-mini",
	// "anthropic:claude-sonnet-4-5", "scripted:FILE" (a script, relative
	// to the file) or "scripted:demo".
	Model string `yaml:"model"`
	// BaseURL overrides the provider's base URL (OPENAI_BASE_URL,
	// ANTHROPIC_BASE_URL).
	BaseURL string `yaml:"base_url"`
	// APIKeyEnv names the environment variable holding the key (default
	// OPENAI_API_KEY, ANTHROPIC_API_KEY).
	APIKeyEnv string `yaml:"api_key_env"`
	// MaxTokens caps each reply's tokens.
	MaxTokens int `yaml:"max_tokens"`
	// Temperature, when set, is sent to the model.
	Temperature *float64 `yaml:"temperature"`
	// ModelTimeout bounds one model call (default loop.DefaultModelTimeout).
	ModelTimeout Duration `yaml:"model_timeout"`
	// ModelAttempts bounds the attempts of one model call (default
	// loop.DefaultModelAttempts).
	ModelAttempts int `yaml:"model_attempts"`
	// System is the system prompt.
	System string `yaml:"system"`
	// Root is the directory the file tools are confined to and Bash runs
	// in, relative to the file (default: the file's directory).
	Root string `yaml:"root"`
	// Tools lists the built-in tools the agent may use, by name (Bash,
	// Read, Write, Edit, Glob, Grep, clock, calculator, read_file).
	Tools []string `yaml:"tools"`
	// Bash configures the Bash tool.
	Bash Bash `yaml:"bash"`
	// ToolTimeout bounds one tool call (default loop.DefaultToolTimeout);
	// it caps Bash's timeouts too.
	ToolTimeout Duration `yaml:"tool_timeout"`
	// MCP lists MCP servers whose tools the agent may use, named
	// mcp__<server>__<tool>.
	MCP []MCPServer `yaml:"mcp"`
	// MaxSteps bounds a run (default loop.DefaultMaxSteps).
	MaxSteps int `yaml:"max_steps"`
	// Budget bounds what a run may use.
	Budget Budget `yaml:"budget"`
	// Prices is what the model costs, for Budget.MaxCostUSD and the cost
	// in usage.
	Prices *Prices `yaml:"prices"`
	// Subagents lists the agents of the file this agent may call (the Task
	// tool); MaxDepth bounds how deep calls nest (default 3).
	Subagents []string `yaml:"subagents"`
	MaxDepth  int      `yaml:"max_depth"`
	// Compaction is the agent's context budget: past it, the older part of
	// a run's conversation is summarised.
	Compaction Compaction `yaml:"compaction"`
	// Approval lists the tool calls that wait for a human's approval, and
	// what an unanswered request becomes.
	Approval Approval `yaml:"approval"`
	// Hooks are hooks in Claude Code's settings format, run on this
	// agent's runs only (command hooks in its root).
	Hooks Hooks `yaml:"hooks"`

	file *File
	node *yaml.Node // where the agent is in the file, for errors
}

// Bash configures the Bash tool of an agent.
type Bash struct {
	// Env lists the variables commands get beyond a minimal base: "NAME"
	// passes the worker's value, "NAME=value" sets one. Nothing else of
	// the worker's environment (its keys) reaches a command.
	Env []string `yaml:"env"`
	// Timeout is a command's default timeout (default 2m).
	Timeout Duration `yaml:"timeout"`
	// MaxOutput is how many characters of output are kept (default 30000).
	MaxOutput int `yaml:"max_output"`
	// Idempotent declares every command the agent runs safe to run twice,
	// so a run resumed after a crash runs an unfinished one again.
	Idempotent bool `yaml:"idempotent"`
	// Sandbox confines commands: none (the default: a command reaches
	// whatever the worker's user can), bubblewrap or required (each
	// command under bubblewrap: the root read-write, the system
	// directories read-only, nothing else of the file system, no
	// network; the worker refuses to start where bubblewrap is missing or
	// does not work). See docs/SECURITY.md.
	Sandbox string `yaml:"sandbox"`
	// SandboxNetwork gives sandboxed commands the network.
	SandboxNetwork bool `yaml:"sandbox_network"`
}

// MCPServer is an MCP server of an agent: a stdio command or a streamable
// HTTP URL.
type MCPServer struct {
	Name    string            `yaml:"name"`
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"`
	Dir     string            `yaml:"dir"`
	URL     string            `yaml:"url"`
	Headers map[string]string `yaml:"headers"`
	Timeout Duration          `yaml:"timeout"`
}

// Compaction is an agent's context budget.
type Compaction struct {
	// MaxTokens is the budget (0: never compact).
	MaxTokens int `yaml:"max_tokens"`
	// Keep is how many of the latest messages are kept verbatim (default 4).
	Keep int `yaml:"keep"`
	// Instruction asks the model for the summary.
	Instruction string `yaml:"instruction"`
	// Fail ends the run when the summary fails (default: go on).
	Fail bool `yaml:"fail"`
}

// Approval is an agent's approval policy.
type Approval struct {
	// Tools are the calls that wait for approval.
	Tools []ApprovalMatch `yaml:"tools"`
	// Expiry is how long a request waits (default 24h).
	Expiry Duration `yaml:"expiry"`
	// OnExpiry is what an unanswered request becomes: deny (the default:
	// the model is told the call was denied, and the run goes on), reject
	// (the run ends, rejected) or approve.
	OnExpiry string `yaml:"on_expiry"`
}

// ApprovalMatch selects tool calls: by tool name (globs, alternatives with
// |: "Bash", "mcp__*"), and optionally by a regular expression over the
// call's arguments (their JSON).
type ApprovalMatch struct {
	Tool string `yaml:"tool"`
	Args string `yaml:"args"`
}

// Budget bounds what one run of the agent may use; zero fields bound
// nothing.
type Budget struct {
	MaxInputTokens  int     `yaml:"max_input_tokens"`
	MaxOutputTokens int     `yaml:"max_output_tokens"`
	MaxCostUSD      float64 `yaml:"max_cost_usd"`
}

// Prices is what a model costs, in US dollars per million tokens.
type Prices struct {
	InputPerMTok  float64 `yaml:"input_per_mtok"`
	OutputPerMTok float64 `yaml:"output_per_mtok"`
}

// Duration is a time.Duration written as a Go duration string ("90s").
type Duration time.Duration

// UnmarshalYAML reads a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (like 90s or 2m)", n.Line, s)
	}
	if v < 0 {
		return fmt.Errorf("line %d: duration %s is negative", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// Load reads and checks an agent definitions file. Errors wrap ErrInvalid
// and name the file, the line, the agent and the field.
func Load(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return Parse(b, path)
}

// Parse reads and checks an agent definitions file's content; name is its
// path (for errors, and the directory relative paths start from).
func Parse(data []byte, name string) (*File, error) {
	name = cmp.Or(name, "agents.yaml")
	f := &File{Path: name}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, syntaxError(data, name, err)
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("%w: %s: empty file (want agents: [...])", ErrInvalid, name)
	}
	root := doc.Content[0]
	list := mapValue(root, "agents")
	if root.Kind != yaml.MappingNode || list == nil {
		return nil, fmt.Errorf("%w: %s:%d: want a mapping with agents: [...]", ErrInvalid, name, root.Line)
	}
	if list.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%w: %s:%d: agents: expected a list", ErrInvalid, name, list.Line)
	}
	for _, n := range list.Content {
		if n.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%w: %s:%d: an agent: expected a mapping (id: ..., model: ...)", ErrInvalid, name, n.Line)
		}
	}
	// Decoded strictly from the text, so yaml's errors carry the file's
	// lines and name unknown fields.
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(f); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalid, describe(err, name, &doc))
	}
	if len(f.Agents) == 0 {
		return nil, fmt.Errorf("%w: %s:%d: agents: the list is empty", ErrInvalid, name, list.Line)
	}
	seen := map[string]int{}
	for i, a := range f.Agents {
		a.file, a.node = f, list.Content[i]
		if err := a.check(); err != nil {
			return nil, err
		}
		if line, dup := seen[a.ID]; dup {
			return nil, a.errorf("id", "agent id %q is also defined on line %d", a.ID, line)
		}
		seen[a.ID] = a.node.Line
	}
	for _, a := range f.Agents {
		for _, id := range a.Subagents {
			if _, ok := seen[id]; !ok {
				return nil, a.errorf("subagents", "agent %q is not defined in this file (it has %s)", id, strings.Join(f.IDs(), ", "))
			}
		}
	}
	return f, nil
}

// describe words yaml's decoding errors of file name (its document doc)
// for a person, each with its place as file:line and the field it is about:
// "ops.yaml:7: tool: is not a field of an agent", "ops.yaml:4: max_steps:
// expected a number, not the string `ten`".
func describe(err error, name string, doc *yaml.Node) string {
	var te *yaml.TypeError
	list := []string{strings.TrimPrefix(err.Error(), "yaml: ")}
	if errors.As(err, &te) {
		list = te.Errors
	}
	msgs := make([]string, len(list))
	for i, m := range list {
		line := 0
		if rest, ok := strings.CutPrefix(m, "line "); ok {
			if j := strings.Index(rest, ": "); j > 0 {
				if n, err := strconv.Atoi(rest[:j]); err == nil {
					line, m = n, rest[j+2:]
				}
			}
		}
		m = strings.Replace(m, "not found in type agents.Agent", "is not a field of an agent", 1)
		m = strings.Replace(m, "not found in type agents.", "is not a field of ", 1)
		if what, into, ok := strings.Cut(strings.TrimPrefix(m, "cannot unmarshal "), " into "); ok && strings.HasPrefix(m, "cannot unmarshal ") {
			m = "expected " + goKind(into) + ", not " + yamlKind(what)
		}
		where := name
		if line > 0 {
			where = fmt.Sprintf("%s:%d", name, line)
			if f := fieldAt(doc, line); f != "" && !strings.HasPrefix(m, "field ") {
				m = f + ": " + m
			}
		}
		msgs[i] = where + ": " + m
	}
	return strings.Join(msgs, "; ")
}

// goKind says what a Go type of the agent file holds, for people.
func goKind(t string) string {
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "a mapping"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"), strings.HasPrefix(t, "float"):
		return "a number"
	case t == "bool":
		return "true or false"
	case t == "string":
		return "a string"
	}
	return "a value of another type (" + t + ")"
}

// yamlKind says what a YAML node of a type error is: "the string `ten`".
func yamlKind(s string) string {
	for tag, kind := range map[string]string{"!!str": "the string", "!!int": "the number", "!!float": "the number", "!!bool": "the boolean",
		"!!map": "a mapping", "!!seq": "a list", "!!null": "nothing"} {
		if rest, ok := strings.CutPrefix(s, tag); ok {
			return kind + rest
		}
	}
	return s
}

// fieldAt names the mapping key on line (the outermost one there: tools of
// "tools: {Bash: true}"), "" when none is.
func fieldAt(n *yaml.Node, line int) string {
	if n == nil {
		return ""
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Line == line {
				return n.Content[i].Value // the outermost key on the line
			}
		}
	}
	for _, c := range n.Content {
		if f := fieldAt(c, line); f != "" {
			return f
		}
	}
	return ""
}

// mapValue returns the value of key in mapping n, or nil.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// Define checks an agent defined in code (or from command-line flags) as
// Parse checks one of a file; relative paths in it start from dir. where
// names it in errors ("flags").
func Define(a Agent, dir, where string) (*Agent, error) {
	f := &File{Path: filepath.Join(dir, where)}
	def := &a
	def.file = f
	if err := def.check(); err != nil {
		return nil, err
	}
	f.Agents = []*Agent{def}
	return def, nil
}

// errorf is an error about field of a naming the file and line.
func (a *Agent) errorf(field, format string, args ...any) error {
	who := "an agent"
	if a.ID != "" {
		who = fmt.Sprintf("agent %q", a.ID)
	}
	where := a.file.Path
	if a.node != nil {
		line := a.node.Line
		if v := mapValue(a.node, field); v != nil {
			line = v.Line
		}
		where = fmt.Sprintf("%s:%d", where, line)
	}
	return fmt.Errorf("%w: %s: %s: %s: %s", ErrInvalid, where, who, field, fmt.Sprintf(format, args...))
}

// check validates what can be checked without I/O.
func (a *Agent) check() error {
	if err := events.ValidateID("agent", a.ID); err != nil {
		return a.errorf("id", "%v", err)
	}
	if _, _, err := SplitModel(a.Model); err != nil {
		return a.errorf("model", "%v", err)
	}
	if err := checkVersion(a.Version); err != nil {
		return a.errorf("version", "%v", err)
	}
	switch a.OnDefinitionChange {
	case "", loop.DefinitionWait, loop.DefinitionAdopt:
	default:
		return a.errorf("on_definition_change", "%q (want wait or adopt)", a.OnDefinitionChange)
	}
	switch {
	case a.MaxTokens < 0:
		return a.errorf("max_tokens", "%d is negative", a.MaxTokens)
	case a.MaxSteps < 0:
		return a.errorf("max_steps", "%d is negative", a.MaxSteps)
	case a.MaxDepth < 0:
		return a.errorf("max_depth", "%d is negative", a.MaxDepth)
	case a.ModelAttempts < 0:
		return a.errorf("model_attempts", "%d is negative", a.ModelAttempts)
	case a.Compaction.MaxTokens < 0 || a.Compaction.Keep < 0:
		return a.errorf("compaction", "a negative bound")
	case a.Bash.MaxOutput < 0:
		return a.errorf("bash", "max_output %d is negative", a.Bash.MaxOutput)
	case a.ToolTimeout != 0 && a.Bash.Timeout > a.ToolTimeout:
		return a.errorf("bash", "timeout %v is longer than the agent's tool_timeout %v", time.Duration(a.Bash.Timeout), time.Duration(a.ToolTimeout))
	case !slices.Contains(append(tools.SandboxModes(), ""), a.Bash.Sandbox):
		return a.errorf("bash", "unknown sandbox %q (known: %s)", a.Bash.Sandbox, strings.Join(tools.SandboxModes(), ", "))
	case a.Bash.SandboxNetwork && (a.Bash.Sandbox == "" || a.Bash.Sandbox == tools.SandboxNone):
		return a.errorf("bash", "sandbox_network is set without a sandbox (sandbox: %s or %s)", tools.SandboxBubblewrap, tools.SandboxRequired)
	}
	known := tools.Names()
	for i, t := range a.Tools {
		if !slices.Contains(known, t) {
			return a.errorf("tools", "unknown tool %q (known: %s)", t, strings.Join(known, ", "))
		}
		if slices.Contains(a.Tools[:i], t) {
			return a.errorf("tools", "tool %q listed twice", t)
		}
	}
	names := map[string]bool{}
	for _, s := range a.MCP {
		c := s.config(a.dir())
		if err := c.Validate(); err != nil {
			return a.errorf("mcp", "%v", err)
		}
		if names[s.Name] {
			return a.errorf("mcp", "server %q listed twice", s.Name)
		}
		names[s.Name] = true
	}
	if _, err := a.approval(); err != nil {
		return a.errorf("approval", "%v", err)
	}
	if err := a.budget().Validate(); err != nil {
		return a.errorf("budget", "%v", err)
	}
	if p := a.Prices; p != nil && (p.InputPerMTok < 0 || p.OutputPerMTok < 0) {
		return a.errorf("prices", "a negative price")
	}
	if a.Budget.MaxCostUSD > 0 && a.Prices == nil {
		return a.errorf("budget", "max_cost_usd needs the model's prices (prices: {input_per_mtok, output_per_mtok})")
	}
	return nil
}

// Agent returns the agent with id, or nil.
func (f *File) Agent(id string) *Agent {
	for _, a := range f.Agents {
		if a.ID == id {
			return a
		}
	}
	return nil
}

// IDs returns the agents' ids, in the file's order.
func (f *File) IDs() []string {
	ids := make([]string, len(f.Agents))
	for i, a := range f.Agents {
		ids[i] = a.ID
	}
	return ids
}

// dir is the directory relative paths start from.
func (a *Agent) dir() string {
	if a.file == nil || a.file.Path == "" {
		return "."
	}
	return filepath.Dir(a.file.Path)
}

func (a *Agent) budget() events.Budget {
	return events.Budget{MaxInputTokens: a.Budget.MaxInputTokens, MaxOutputTokens: a.Budget.MaxOutputTokens, MaxCostUSD: a.Budget.MaxCostUSD}
}

func (s MCPServer) config(dir string) mcp.ServerConfig {
	c := mcp.ServerConfig{Name: s.Name, Command: s.Command, Args: s.Args, Env: s.Env, Dir: s.Dir,
		URL: s.URL, Headers: s.Headers, Timeout: time.Duration(s.Timeout)}
	if c.Dir != "" && !filepath.IsAbs(c.Dir) {
		c.Dir = filepath.Join(dir, c.Dir)
	}
	return c
}
