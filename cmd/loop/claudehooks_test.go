package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/events"
)

// loopRun runs "loop ARGS..." in process and returns its exit code,
// stdout and stderr.
func loopRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

const (
	rmScript = `[{"content": "Cleaning.", "tool_calls": [{"name": "Bash", "arguments": {"command": "rm -rf victim"}}]},
	 {"content": "result: {{tool:Bash}}"}]`
	guard    = "#!/bin/sh\nif grep -q 'rm -rf'; then echo 'no rm -rf here' >&2; exit 2; fi\n"
	settings = `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}]}}`
)

// loop run --claude-settings FILE: the file's hooks run on the agent.
func TestRunClaudeSettings(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"script.json": rmScript, "guard.sh": guard, "settings.json": settings, "victim/keep": "x"})
	code, stdout, stderr := loopRun(t, "run", "--store", filepath.Join(dir, "store"), "--listen", "none", "--root", dir, "--tools", "Bash",
		"--script", filepath.Join(dir, "script.json"), "--claude-settings", filepath.Join(dir, "settings.json"), "tidy up")
	if code != exitOK || !strings.Contains(stdout, "result: denied: claude-PreToolUse-0-0: no rm -rf here") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "victim", "keep")); err != nil {
		t.Fatalf("rm -rf ran: %v", err)
	}

	// A file hookbus cannot load is refused before anything runs.
	writeFiles(t, dir, map[string]string{"bad.json": `{"hooks": {"PreToolUse": [{"matcher": "Bash"}]}}`})
	code, _, stderr = loopRun(t, "run", "--store", filepath.Join(dir, "store"), "--listen", "none", "--claude-settings", filepath.Join(dir, "bad.json"), "hi")
	if code != exitUsage || !strings.Contains(stderr, "bad.json: hooks.PreToolUse[0]: no hooks") {
		t.Fatalf("bad settings: exit %d\n%s", code, stderr)
	}
}

// An agent's hooks section runs on that agent's runs only.
func TestAgentHooksSection(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"script.json": rmScript, "guard.sh": guard, "victim/keep": "x", "agents.yaml": `agents:
  - id: guarded
    model: scripted:script.json
    tools: [Bash]
    hooks:
      PreToolUse:
        - matcher: Bash
          hooks: [{type: command, command: ./guard.sh}]
  - id: free
    model: scripted:script.json
    tools: [Bash]
`})
	store := filepath.Join(dir, "store")
	code, stdout, stderr := loopRun(t, "run", "--store", store, "--listen", "none", "--agents", filepath.Join(dir, "agents.yaml"), "--agent", "guarded", "tidy up")
	if code != exitOK || !strings.Contains(stdout, "no rm -rf here") {
		t.Fatalf("guarded: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "victim", "keep")); err != nil {
		t.Fatalf("the guarded agent's rm -rf ran: %v", err)
	}
	code, stdout, stderr = loopRun(t, "run", "--store", store, "--listen", "none", "--agents", filepath.Join(dir, "agents.yaml"), "--agent", "free", "tidy up")
	if code != exitOK || strings.Contains(stdout, "denied") {
		t.Fatalf("free: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "victim")); !os.IsNotExist(err) {
		t.Fatalf("the free agent's rm -rf did not run: %v", err)
	}
}

// Prompt and agent hooks of a settings file run on the handler's model
// (provider:name, as in an agents file), and the agent hook's sub-agent
// run is recorded in the stream.
func TestClaudeSettingsPromptAndAgentHooks(t *testing.T) {
	for _, typ := range []string{"prompt", "agent"} {
		t.Run(typ, func(t *testing.T) {
			dir := t.TempDir()
			verdict := filepath.Join(dir, "verdict.json")
			hooks := `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "` + typ +
				`", "prompt": "Is this command safe? $ARGUMENTS", "model": "scripted:` + verdict + `", "timeout": 20}]}]}}`
			writeFiles(t, dir, map[string]string{"script.json": rmScript, "settings.json": hooks, "victim/keep": "x",
				"verdict.json": `[{"content": "{\"ok\": false, \"reason\": \"rm -rf is not safe\"}"}]`})
			store := filepath.Join(dir, "store")
			code, stdout, stderr := loopRun(t, "run", "--store", store, "--listen", "none", "--root", dir, "--tools", "Bash",
				"--script", filepath.Join(dir, "script.json"), "--claude-settings", filepath.Join(dir, "settings.json"), "--session", "s1", "tidy up")
			if code != exitOK || !strings.Contains(stdout, "denied: claude-PreToolUse-0-0: rm -rf is not safe") {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "victim", "keep")); err != nil {
				t.Fatalf("rm -rf ran: %v", err)
			}
			if typ == "agent" {
				// The sub-agent's run is in the stream, under the plugin's
				// agent id.
				stages := storedStages(t, store, bus.Filter{Agent: "claude-PreToolUse-0-0"})
				if !strings.Contains(stages, "run.completed") {
					t.Fatalf("sub-agent run not recorded: %s", stages)
				}
			}
		})
	}

	// A handler's unknown field and an unknown provider are refused.
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a.json": `{"hooks": {"Stop": [{"hooks": [{"type": "prompt", "prompt": "p", "if": "Bash(*)"}]}]}}`,
		"b.json": `{"hooks": {"Stop": [{"hooks": [{"type": "agent", "prompt": "p", "model": "nope:x"}]}]}}`,
	})
	for file, want := range map[string]string{"a.json": `unknown field "if"`, "b.json": `unknown model provider "nope"`} {
		code, _, stderr := loopRun(t, "run", "--store", filepath.Join(dir, "store"), "--listen", "none", "--claude-settings", filepath.Join(dir, file), "hi")
		if code == exitOK || !strings.Contains(stderr, want) {
			t.Fatalf("%s: exit %d\n%s", file, code, stderr)
		}
	}
}

// storedStages opens a stopped store and lists the stages of the events f
// selects, space-separated.
func storedStages(t *testing.T, store string, f bus.Filter) string {
	t.Helper()
	cf := cli.ConnFlags{Store: store}
	c, err := cf.Open(context.Background(), "test", slog.New(slog.DiscardHandler), cli.ReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out []string
	if _, err := c.Bus.Replay(context.Background(), f, func(e *events.Event) error {
		out = append(out, string(e.Stage))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, " ")
}

// A settings file's SessionStart hooks fire when the session begins,
// before its UserPromptSubmit hooks, with source startup on a session's
// first run and resume on a later one; SessionEnd's last.
func TestClaudeSettingsSessionOrder(t *testing.T) {
	dir := t.TempDir()
	logf := filepath.Join(dir, "hooks.log")
	logHook := func(event string) string {
		return `{"type": "command", "command": "printf '` + event + ` ' >> ` + logf + `; (grep -o 'source\\\":\\\"[a-z]*' | cut -c10- || true) >> ` + logf + `; echo >> ` + logf + `"}`
	}
	writeFiles(t, dir, map[string]string{
		"script.json": `[{"content": "hello"}]`,
		"settings.json": `{"hooks": {
		  "UserPromptSubmit": [{"hooks": [` + logHook("UserPromptSubmit") + `]}],
		  "SessionStart": [{"hooks": [` + logHook("SessionStart") + `]}],
		  "SessionEnd": [{"hooks": [` + logHook("SessionEnd") + `]}]}}`,
	})
	for range 2 {
		code, stdout, stderr := loopRun(t, "run", "--store", filepath.Join(dir, "store"), "--listen", "none", "--root", dir,
			"--script", filepath.Join(dir, "script.json"), "--claude-settings", filepath.Join(dir, "settings.json"), "--session", "s1", "hi")
		if code != exitOK {
			t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
		}
	}
	b, err := os.ReadFile(logf)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			got = append(got, l)
		}
	}
	want := []string{"SessionStart startup", "UserPromptSubmit", "SessionEnd", "SessionStart resume", "UserPromptSubmit", "SessionEnd"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("hooks ran:\n got %q\nwant %q", got, want)
	}
}
