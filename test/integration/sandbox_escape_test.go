//go:build linux

package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sandboxScript writes a scripted model's replies: each step calls one
// tool, the last answers with the last Bash result.
func sandboxScript(t *testing.T, calls ...map[string]any) string {
	t.Helper()
	var replies []map[string]any
	for _, c := range calls {
		replies = append(replies, map[string]any{"content": "Calling.", "tool_calls": []map[string]any{c}})
	}
	replies = append(replies, map[string]any{"content": "Result: {{tool:Bash}}"})
	b, err := json.Marshal(replies)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// loop run --sandbox bubblewrap, whoever the worker runs as (root
// included): the command has no capability and cannot write the kernel's
// settings, mount or make a namespace; the host's core_pattern is unchanged.
func TestLoopRunSandboxTakesNoPrivilege(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap (bwrap) is not installed: the sandbox tests need it (make sandbox installs it)")
	}
	const core = "/proc/sys/kernel/core_pattern"
	before, err := os.ReadFile(core)
	if err != nil {
		t.Fatal(err)
	}
	cmd := "grep CapEff /proc/self/status; echo uid=$(id -u); " +
		"(cat " + core + " > " + core + ") 2>/dev/null && echo CORE-WRITTEN; " +
		"mkdir -p /tmp/x; mount -t tmpfs none /tmp/x 2>/dev/null && echo MOUNTED; " +
		"unshare -r true 2>/dev/null && echo UNSHARED; echo end"
	script := sandboxScript(t, map[string]any{"name": "Bash", "arguments": map[string]any{"command": cmd}})
	r := runWithin(t, 45*time.Second, nil, "loop", "run", "--store", filepath.Join(t.TempDir(), "store"), "--listen", "none",
		"--script", script, "--tools", "Bash", "--root", t.TempDir(), "--sandbox", "bubblewrap", "probe")
	if strings.Contains(r.stderr, "does not work here") {
		t.Skipf("bubblewrap does not work here: %s", r.stderr)
	}
	if r.code != 0 || !strings.Contains(r.stdout, "end") {
		t.Fatalf("loop run: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	t.Logf("as uid %d: %s", os.Geteuid(), r.stdout)
	if !strings.Contains(r.stdout, "CapEff:\t0000000000000000") || strings.Contains(r.stdout, "uid=0\n") {
		t.Errorf("the sandboxed command kept privilege: %s", r.stdout)
	}
	for _, escaped := range []string{"CORE-WRITTEN", "MOUNTED", "UNSHARED"} {
		if strings.Contains(r.stdout, escaped) {
			t.Errorf("the sandboxed command did %s: %s", escaped, r.stdout)
		}
	}
	if after, err := os.ReadFile(core); err != nil || !bytes.Equal(before, after) {
		t.Errorf("%s after the run: %q, %v; before: %q", core, after, err, before)
	}
}

// loop run --claude-settings with a PreToolUse hook script in the agent's
// root: the agent rewrites the script with its Write tool, and the next
// Bash call is denied, saying the script changed; the new text never runs
// (it would leave a marker outside the root).
func TestLoopRunRewrittenHookScriptDoesNotRun(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	ran, pwned := filepath.Join(outside, "ran"), filepath.Join(outside, "pwned")
	hook := filepath.Join(root, ".hooks", "pre.sh")
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hook, []byte("#!/bin/sh\ntouch "+ran+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(settings, []byte(`{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
	  {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.hooks/pre.sh"}]}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	script := sandboxScript(t,
		map[string]any{"name": "Bash", "arguments": map[string]any{"command": "echo first"}},
		map[string]any{"name": "Write", "arguments": map[string]any{"file_path": ".hooks/pre.sh", "content": "#!/bin/sh\ntouch " + pwned + "\n"}},
		map[string]any{"name": "Bash", "arguments": map[string]any{"command": "echo second"}},
	)
	r := runWithin(t, 45*time.Second, nil, "loop", "run", "--store", filepath.Join(t.TempDir(), "store"), "--listen", "none",
		"--script", script, "--tools", "Bash,Write", "--root", root, "--claude-settings", settings, "go")
	if r.code != 0 {
		t.Fatalf("loop run: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(ran); err != nil {
		t.Fatalf("the hook as configured did not run: %v\nstdout: %s\nstderr: %s", err, r.stdout, r.stderr)
	}
	if _, err := os.Stat(pwned); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the rewritten hook script ran: %s exists (%v)\nstdout: %s", pwned, err, r.stdout)
	}
	if !strings.Contains(r.stdout, "changed since the worker started") || strings.Contains(r.stdout, "Result: second") {
		t.Fatalf("the call after the rewrite was not denied, saying why:\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
	}
}
