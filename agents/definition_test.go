package agents_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/agents"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
)

const defBase = `agents:
  - id: ops
    version: "3"
    model: scripted:ops.json
    system: You keep things running.
    tools: [Bash, Read]
    bash: {timeout: 30s}
    max_steps: 12
    approval: {tools: [{tool: Bash}], expiry: 1h}
    subagents: [helper]
  - id: helper
    model: scripted:demo
    tools: [clock]
    subagents: [ops]
`

// writeDefs writes an agents file (and the ops script) in a new directory
// and returns each agent's definition.
func writeDefs(t *testing.T, file, script string) map[string]events.Definition {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ops.json"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "agents.yaml")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := agents.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]events.Definition{}
	for _, a := range f.Agents {
		d, err := a.Definition()
		if err != nil {
			t.Fatal(err)
		}
		if events.ValidateDigest(d.Digest) != nil || d.Name != a.ID || d.Version != a.Version {
			t.Fatalf("definition of %s: %+v", a.ID, d)
		}
		out[a.ID] = d
	}
	return out
}

const opsScript = `[{"content": "done"}]`

// The digest is what defines the agent: the same file in another
// directory gives the same digests; a change to the agent, to its script,
// or to a sub-agent it may call (in a cycle too) gives another; where its
// key comes from and its routing policy do not.
func TestDefinitionDigest(t *testing.T) {
	base := writeDefs(t, defBase, opsScript)
	if again := writeDefs(t, defBase, opsScript); again["ops"] != base["ops"] || again["helper"] != base["helper"] {
		t.Fatalf("the same file elsewhere: %+v, then %+v", base, again)
	}
	dir := t.TempDir()
	abs := filepath.Join(dir, "elsewhere.json")
	if err := os.WriteFile(abs, []byte(opsScript), 0o600); err != nil {
		t.Fatal(err)
	}
	if moved := writeDefs(t, strings.Replace(defBase, "scripted:ops.json", "scripted:"+abs, 1), opsScript); moved["ops"] != base["ops"] {
		t.Fatalf("the same script at another path: %+v, then %+v", base["ops"], moved["ops"])
	}
	if base["ops"].Digest == base["helper"].Digest {
		t.Fatal("two agents share a digest")
	}
	for name, tc := range map[string]struct {
		file, script string
		changes      []string // agents whose digest must change
	}{
		"system prompt":   {strings.Replace(defBase, "keep things running", "keep things up", 1), opsScript, []string{"ops", "helper"}},
		"a tool":          {strings.Replace(defBase, "[Bash, Read]", "[Bash, Read, Grep]", 1), opsScript, []string{"ops", "helper"}},
		"a bash setting":  {strings.Replace(defBase, "timeout: 30s", "timeout: 31s", 1), opsScript, []string{"ops", "helper"}},
		"the sandbox":     {strings.Replace(defBase, "timeout: 30s}", "timeout: 30s, sandbox: bubblewrap}", 1), opsScript, []string{"ops", "helper"}},
		"a tool timeout":  {strings.Replace(defBase, "    max_steps: 12\n", "    max_steps: 12\n    tool_timeout: 5m\n", 1), opsScript, []string{"ops", "helper"}},
		"the version":     {strings.Replace(defBase, `version: "3"`, `version: "4"`, 1), opsScript, []string{"ops", "helper"}},
		"the approval":    {strings.Replace(defBase, "expiry: 1h", "expiry: 2h", 1), opsScript, []string{"ops", "helper"}},
		"the script":      {defBase, `[{"content": "done!"}]`, []string{"ops", "helper"}},
		"a sub-agent":     {strings.Replace(defBase, "tools: [clock]", "tools: [clock, calculator]", 1), opsScript, []string{"ops", "helper"}},
		"the key's place": {strings.Replace(defBase, "    max_steps: 12\n", "    max_steps: 12\n    api_key_env: OTHER\n", 1), opsScript, nil},
		"the policy":      {strings.Replace(defBase, "    max_steps: 12\n", "    max_steps: 12\n    on_definition_change: adopt\n", 1), opsScript, nil},
	} {
		got := writeDefs(t, tc.file, tc.script)
		for _, id := range []string{"ops", "helper"} {
			changed := got[id].Digest != base[id].Digest
			want := false
			for _, c := range tc.changes {
				want = want || c == id
			}
			if changed != want {
				t.Errorf("%s: the digest of %s changed: %v, want %v", name, id, changed, want)
			}
		}
	}
	sandboxed := writeDefs(t, strings.Replace(defBase, "timeout: 30s}", "timeout: 30s, sandbox: bubblewrap}", 1), opsScript)
	networked := writeDefs(t, strings.Replace(defBase, "timeout: 30s}", "timeout: 30s, sandbox: bubblewrap, sandbox_network: true}", 1), opsScript)
	if sandboxed["ops"] == networked["ops"] {
		t.Error("the sandbox's network left the digest as it was")
	}
}

// version and on_definition_change are checked at load, naming the field.
func TestDefinitionFieldsAreChecked(t *testing.T) {
	for _, tc := range []struct{ extra, want string }{
		{"    version: \"1 beta\"\n", "version"},
		{"    on_definition_change: sometimes\n", `on_definition_change: "sometimes" (want wait or adopt)`},
	} {
		file := "agents:\n  - id: ops\n    model: scripted:demo\n" + tc.extra
		_, err := agents.Parse([]byte(file), "agents.yaml")
		if !errors.Is(err, agents.ErrInvalid) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "agents.yaml:4") {
			t.Errorf("%q: %v, want an error naming %q at line 4", tc.extra, err, tc.want)
		}
	}
}

// Build gives the engine's config the definition and the policy.
func TestBuildSetsTheDefinition(t *testing.T) {
	f, err := agents.Parse([]byte("agents:\n  - id: ops\n    version: v2\n    model: scripted:demo\n    on_definition_change: adopt\n  - id: demo\n    model: scripted:demo\n"), "agents.yaml")
	if err != nil {
		t.Fatal(err)
	}
	built, err := f.BuildAll(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := f.Agent("ops").Definition()
	if c := built[0].Config; c.Definition != want || c.OnDefinitionChange != loop.DefinitionAdopt || want.Version != "v2" {
		t.Fatalf("ops config: %+v %q", c.Definition, c.OnDefinitionChange)
	}
	if c := built[1].Config; c.Definition.Digest == "" || c.OnDefinitionChange != loop.DefinitionWait {
		t.Fatalf("demo config: %+v %q", c.Definition, c.OnDefinitionChange)
	}
}

// The canonical form is part of the protocol (docs/PROTOCOL.md, "Agent
// definitions"): a change to it changes every digest, so it changes only
// with definitionFormat, and this digest with it.
func TestDefinitionDigestIsStable(t *testing.T) {
	f, err := agents.Parse([]byte(`agents:
  - id: ops
    version: "2"
    model: scripted:demo
    system: You keep things running.
    tools: [clock, calculator]
    max_steps: 7
    budget: {max_output_tokens: 100}
    approval: {tools: [{tool: calculator, args: "6"}], expiry: 90s}
`), "agents.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.Agent("ops").Definition()
	if err != nil {
		t.Fatal(err)
	}
	// The SHA-256 of docs/PROTOCOL.md's example:
	// {"format":1,"name":"ops","version":"2","model":{"provider":"scripted","name":"demo"},"system":"You keep things running.","tools":["clock","calculator"],"bash":{},"max_steps":7,"budget":{"max_output_tokens":100},"approval":{"tools":[{"tool":"calculator","args":"6"}],"expiry":"1m30s"},"compaction":{}}
	if want := "993b9a9072f9d950c42ed0f3bfdce3d84be5c5f426ac886847c921480670da33"; d.Digest != want {
		t.Fatalf("digest %s, want %s", d.Digest, want)
	}
}
