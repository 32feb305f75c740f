package agents_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/agents"
)

// The Bash sandbox and the tool timeout are read and checked with the
// file; an agent whose sandbox cannot be had is refused when it is built,
// before anything runs.
func TestSandboxAndToolTimeoutSettings(t *testing.T) {
	f, err := agents.Parse([]byte("agents:\n  - id: a\n    model: scripted:demo\n    tools: [Bash]\n    tool_timeout: 3m\n    bash: {sandbox: required, sandbox_network: true, timeout: 1m}\n"), "agents.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a := f.Agent("a")
	if a.Bash.Sandbox != "required" || !a.Bash.SandboxNetwork || time.Duration(a.ToolTimeout) != 3*time.Minute {
		t.Fatalf("agent = %+v", a)
	}
	for _, tc := range []struct{ name, bash, want string }{
		{"unknown sandbox", "bash: {sandbox: chroot}", `unknown sandbox "chroot" (known: none, bubblewrap, required)`},
		{"network without a sandbox", "bash: {sandbox_network: true}", "sandbox_network is set without a sandbox"},
		{"bash longer than the tool timeout", "tool_timeout: 1m\n    bash: {timeout: 2m}", "timeout 2m0s is longer than the agent's tool_timeout 1m0s"},
	} {
		_, err := agents.Parse([]byte("agents:\n  - id: a\n    model: scripted:demo\n    tools: [Bash]\n    "+tc.bash+"\n"), "agents.yaml")
		if !errors.Is(err, agents.ErrInvalid) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "agents.yaml:") {
			t.Errorf("%s: %v; want ErrInvalid saying %q", tc.name, err, tc.want)
		}
	}

	// Without bwrap in PATH, sandbox: required is refused at build.
	root := t.TempDir()
	t.Setenv("PATH", t.TempDir())
	def, err := agents.Define(agents.Agent{ID: "a", Model: "scripted:demo", Root: root, Tools: []string{"Bash"},
		Bash: agents.Bash{Sandbox: "required"}}, root, "flags")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := def.Build(context.Background(), nil); !errors.Is(err, agents.ErrBuild) || !strings.Contains(err.Error(), "bubblewrap is not installed") {
		t.Fatalf("Build with sandbox: required and no bwrap = %v; want ErrBuild saying bubblewrap is not installed", err)
	}
}

// tool_timeout reaches the engine's config and caps Bash's timeouts.
func TestToolTimeoutCapsBash(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no shell")
	}
	root := t.TempDir()
	def, err := agents.Define(agents.Agent{ID: "a", Model: "scripted:demo", Root: root, Tools: []string{"Bash"},
		ToolTimeout: agents.Duration(90 * time.Second)}, root, "flags")
	if err != nil {
		t.Fatal(err)
	}
	b, err := def.Build(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Config.ToolTimeout != 90*time.Second {
		t.Fatalf("ToolTimeout = %v", b.Config.ToolTimeout)
	}
	if schema := string(b.Config.Tools[0].Spec().Parameters); !strings.Contains(schema, `"maximum":90000`) || !strings.Contains(schema, "default 90000") {
		t.Fatalf("Bash's timeouts are not capped at 90s: %s", schema)
	}
}
