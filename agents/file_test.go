package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/agents"
	"github.com/hookbus/hookbus/events"
)

const good = `agents:
  - id: coder
    description: fixes bugs
    model: openai:gpt-4.1-mini
    base_url: http://127.0.0.1:1/v1
    api_key_env: MY_KEY
    max_tokens: 1000
    temperature: 0.2
    model_timeout: 90s
    system: You fix bugs.
    root: .
    tools: [Bash, Read, Edit, Glob, Grep]
    bash: {env: [GOPATH], timeout: 30s, max_output: 1000}
    max_steps: 30
    budget: {max_output_tokens: 20000, max_cost_usd: 0.5}
    prices: {input_per_mtok: 0.4, output_per_mtok: 1.6}
  - id: demo
    model: scripted:demo
    tools: [clock, calculator]
`

func TestParseReadsEveryField(t *testing.T) {
	f, err := agents.Parse([]byte(good), "dir/agents.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := f.IDs(); len(got) != 2 || got[0] != "coder" || got[1] != "demo" {
		t.Fatalf("ids %v", got)
	}
	a := f.Agent("coder")
	if a.Model != "openai:gpt-4.1-mini" || a.MaxTokens != 1000 || *a.Temperature != 0.2 || time.Duration(a.ModelTimeout) != 90*time.Second ||
		len(a.Tools) != 5 || a.Bash.Env[0] != "GOPATH" || time.Duration(a.Bash.Timeout) != 30*time.Second ||
		a.MaxSteps != 30 || a.Budget.MaxCostUSD != 0.5 || a.Prices.OutputPerMTok != 1.6 || a.APIKeyEnv != "MY_KEY" {
		t.Fatalf("coder = %+v", a)
	}
	if f.Agent("nobody") != nil {
		t.Fatal("an unknown id found an agent")
	}
}

// An invalid file is refused at start with the line and the field named.
func TestParseNamesTheLineAndField(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"unknown field", "agents:\n  - id: a\n    model: scripted:demo\n    tool: [Bash]\n", []string{"agents.yaml:4: field tool is not a field of an agent"}},
		{"unknown tool", "agents:\n  - id: a\n    model: scripted:demo\n    tools: [Bash, Bsh]\n", []string{"agents.yaml:4", `agent "a": tools: unknown tool "Bsh"`, "known: "}},
		{"unknown provider", "agents:\n  - id: a\n    model: gemini:pro\n", []string{"agents.yaml:3", `unknown model provider "gemini"`}},
		{"no provider", "agents:\n  - id: a\n    model: gpt-4\n", []string{"agents.yaml:3", "not provider:name"}},
		{"no model", "agents:\n  - id: a\n", []string{"agents.yaml:2", "model: no model"}},
		{"bad id", "agents:\n  - id: a.b\n    model: scripted:demo\n", []string{"agents.yaml:2", "id:", `"a.b"`}},
		{"duplicate id", "agents:\n  - id: a\n    model: scripted:demo\n  - id: a\n    model: scripted:demo\n", []string{"agents.yaml:4", "also defined on line 2"}},
		{"bad duration", "agents:\n  - id: a\n    model: scripted:demo\n    model_timeout: soon\n", []string{"agents.yaml:4: model_timeout: ", `"soon" is not a duration`}},
		{"wrong type", "agents:\n  - id: a\n    model: scripted:demo\n    max_steps: many\n", []string{"agents.yaml:4: max_steps: expected a number, not the string `many`"}},
		{"a map for a list", "agents:\n  - id: a\n    model: scripted:demo\n    tools: {Bash: true}\n", []string{"agents.yaml:4: tools: expected a list"}},
		{"agents not a list", "agents: {id: a}\n", []string{"agents.yaml:1", "agents: expected a list"}},
		{"no agents", "agents: []\n", []string{"the list is empty"}},
		{"not yaml", "agents: [\n", []string{"agents.yaml"}},
		{"cost without prices", "agents:\n  - id: a\n    model: scripted:demo\n    budget: {max_cost_usd: 1}\n", []string{"agents.yaml:4", "needs the model's prices"}},
		{"negative budget", "agents:\n  - id: a\n    model: scripted:demo\n    budget: {max_output_tokens: -1}\n", []string{"agents.yaml:4", "budget"}},
		{"bad mcp", "agents:\n  - id: a\n    model: scripted:demo\n    mcp: [{name: x}]\n", []string{"agents.yaml:4", "mcp:"}},
		{"mcp twice", "agents:\n  - id: a\n    model: scripted:demo\n    mcp: [{name: x, command: c}, {name: x, command: c}]\n", []string{"listed twice"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := agents.Parse([]byte(tc.file), "agents.yaml")
			if !errors.Is(err, agents.ErrInvalid) {
				t.Fatalf("Parse = %v, want ErrInvalid", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// A YAML syntax error is reported where the text stops being YAML, with
// the file's name, the line and the column, and the line itself.
func TestParseLocatesSyntaxErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
	}{
		{"indentation", "agents:\n  - id: ops\n    model: scripted:demo\n   tools: [clock]\n",
			"ops.yaml:4:4: did not find expected '-' indicator (check the indentation of this line and of those above it: the entries of one list or mapping start in the same column)\n       tools: [clock]\n       ^"},
		{"unclosed list", "agents:\n  - id: ops\n    model: scripted:demo\n    tools: [clock, calculator\n    max_steps: 3\n",
			"ops.yaml:4:13: did not find expected ',' or ']' (a [ or { on this line is not closed)"},
		{"a colon in a value", "agents:\n  - id: ops\n    model: scripted: demo\n",
			"ops.yaml:3:20: mapping values are not allowed in this context\n        model: scripted: demo\n                       ^"},
		{"a line without a key", "agents:\n  - id: ops\n    model: scripted:demo\n    calculator\n  - id: b\n",
			"ops.yaml:4:5: could not find expected ':'\n        calculator\n        ^"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := agents.Parse([]byte(tc.file), "ops.yaml")
			if !errors.Is(err, agents.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v\nwant it to say\n%s", err, tc.want)
			}
			if strings.Contains(err.Error(), "yaml: line") {
				t.Fatalf("Parse = %v: yaml's own line", err)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "ops.yaml")
	if err := os.WriteFile(path, []byte("agents:\n  - id: ops\n    model: scripted:demo\n   tools: [clock]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := agents.Load(path); err == nil || !strings.Contains(err.Error(), path+":4:4: did not find expected '-' indicator") {
		t.Fatalf("Load = %v", err)
	}
}

func TestLoadNamesAMissingFile(t *testing.T) {
	_, err := agents.Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, agents.ErrInvalid) || !strings.Contains(err.Error(), "nope.yaml") {
		t.Fatalf("Load = %v", err)
	}
}

// Build makes the model, the tools (confined to the root, relative to the
// file) and the config a loop runs with.
func TestBuildScriptedAgentWithTools(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "work"), 0o700); err != nil {
		t.Fatal(err)
	}
	script := `[{"content":"hi"}]`
	if err := os.WriteFile(filepath.Join(dir, "s.json"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	file := "agents:\n  - id: a\n    model: scripted:s.json\n    root: work\n    tools: [Read, Bash]\n    max_steps: 3\n    budget: {max_input_tokens: 100}\n"
	path := filepath.Join(dir, "agents.yaml")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := agents.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Agent("a").Build(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Config.Model == nil || len(b.Config.Tools) != 2 || b.Config.MaxSteps != 3 || b.Config.Budget.MaxInputTokens != 100 {
		t.Fatalf("config %+v", b.Config)
	}
	if n := b.Config.Tools[1].Spec().Name; n != "Bash" {
		t.Fatalf("second tool %s", n)
	}

	// A root that is not there is named.
	bad := "agents:\n  - id: a\n    model: scripted:demo\n    root: missing\n    tools: [Read]\n"
	f, err = agents.Parse([]byte(bad), filepath.Join(dir, "x.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Agent("a").Build(context.Background(), nil); !errors.Is(err, agents.ErrBuild) || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("Build with a missing root = %v", err)
	}
	// So is a script file that is not there.
	f, _ = agents.Parse([]byte("agents:\n  - id: a\n    model: scripted:none.json\n"), filepath.Join(dir, "x.yaml"))
	if _, err := f.Agent("a").Build(context.Background(), nil); !errors.Is(err, agents.ErrBuild) || !strings.Contains(err.Error(), "none.json") {
		t.Fatalf("Build with a missing script = %v", err)
	}
}

// The key comes from the environment variable the agent names; OpenAI's
// own endpoint without a key is refused when the agent is built.
func TestBuildOpenAIAgentNeedsAKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	f, err := agents.Parse([]byte("agents:\n  - id: a\n    model: openai:gpt-4.1-mini\n"), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Agent("a").Build(context.Background(), nil); !errors.Is(err, agents.ErrBuild) || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Fatalf("Build without a key = %v", err)
	}
	t.Setenv("TEAM_KEY", "sk-test")
	f, _ = agents.Parse([]byte("agents:\n  - id: a\n    model: openai:gpt-4.1-mini\n    api_key_env: TEAM_KEY\n"), "a.yaml")
	b, err := f.Agent("a").Build(context.Background(), nil)
	if err != nil {
		t.Fatalf("Build with TEAM_KEY: %v", err)
	}
	_ = b.Close()
}

func TestApprovalPolicy(t *testing.T) {
	f, err := agents.Parse([]byte(`agents:
  - id: a
    model: scripted:demo
    tools: [calculator]
    approval:
      tools:
        - {tool: Bash, args: "rm -rf|git push"}
        - {tool: "mcp__*__delete*"}
      expiry: 1h
      on_expiry: reject
`), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Agent("a").Build(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	pol := b.Config.Approval
	if pol.Expiry != time.Hour || pol.OnExpiry != "reject" || pol.Required == nil {
		t.Fatalf("policy %+v", pol)
	}
	for _, tc := range []struct {
		name, args string
		need       bool
	}{
		{"Bash", `{"command":"rm -rf /tmp/x"}`, true},
		{"Bash", `{"command":"ls"}`, false},
		{"mcp__files__delete_file", `{}`, true},
		{"mcp__files__read", `{}`, false},
		{"calculator", `{}`, false},
	} {
		why := pol.Required(events.ToolCall{Name: tc.name, Arguments: json.RawMessage(tc.args)})
		if (why != "") != tc.need {
			t.Errorf("%s %s: %q, want needs approval %t", tc.name, tc.args, why, tc.need)
		}
	}
	for _, bad := range []string{"on_expiry: maybe", "tools: [{args: x}]", "tools: [{tool: Bash, args: '('}]"} {
		if _, err := agents.Parse([]byte("agents:\n  - id: a\n    model: scripted:demo\n    approval: {"+strings.ReplaceAll(bad, ": ", ": ")+"}\n"), "a.yaml"); !errors.Is(err, agents.ErrInvalid) || !strings.Contains(err.Error(), "approval") {
			t.Errorf("approval {%s}: %v, want ErrInvalid naming approval", bad, err)
		}
	}
}
