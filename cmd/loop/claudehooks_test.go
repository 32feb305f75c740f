package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
