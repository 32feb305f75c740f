//go:build unix

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// toolScript writes a two-step script: step 1 calls tool with args, step 2
// answers with its result.
func toolScript(t *testing.T, tool string, args map[string]any) string {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	script := `[{"content": "Calling it.", "tool_calls": [{"name": "` + tool + `", "arguments": ` + string(raw) + `}]},
  {"content": "Result: {{tool:` + tool + `}}"}]`
	path := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runWithin runs a binary with env added and fails the test if it has not
// ended within d (it is then killed): a run held by a tool.
func runWithin(t *testing.T, d time.Duration, env []string, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, name), args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %q has not ended after %v: stderr:\n%s", name, args, d, errb.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// loop run with a Read of a FIFO in its root completes: the tool refuses
// the FIFO at once (it used to block in open(2) until killed), the model is
// told, and the run ends with its answer.
func TestLoopRunReadOfAFIFOCompletes(t *testing.T) {
	root := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := toolScript(t, "Read", map[string]any{"file_path": "fifo"})
	r := runWithin(t, 45*time.Second, nil, "loop", "run", "--store", filepath.Join(t.TempDir(), "store"), "--listen", "none",
		"--script", script, "--tools", "Read", "--root", root, "read the fifo")
	if r.code != 0 || !strings.Contains(r.stdout, "named pipe (FIFO)") {
		t.Fatalf("loop run: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

// --sandbox required where bubblewrap is not installed: loop run refuses
// to start, saying so, and records nothing.
func TestLoopRunSandboxRequiredWithoutBubblewrap(t *testing.T) {
	empty := t.TempDir() // a PATH without bwrap
	store := filepath.Join(t.TempDir(), "store")
	script := toolScript(t, "Bash", map[string]any{"command": "echo hi"})
	r := runWithin(t, 45*time.Second, []string{"PATH=" + empty}, "loop", "run", "--store", store, "--listen", "none",
		"--script", script, "--tools", "Bash", "--root", t.TempDir(), "--sandbox", "required", "hi")
	if r.code == 0 || !strings.Contains(r.stderr, "bubblewrap is not installed") {
		t.Fatalf("loop run --sandbox required without bwrap: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Fatalf("a run that could not start created the store: %v", err)
	}
}

// loop run --sandbox bubblewrap: a Bash command cannot read a file outside
// the root (the issue's `cd / && cat .../secret`).
func TestLoopRunSandboxedBashCannotReadOutside(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap (bwrap) is not installed: the sandbox tests need it (make sandbox installs it)")
	}
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("top secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := toolScript(t, "Bash", map[string]any{"command": "cd / && cat " + strings.TrimPrefix(secret, "/")})
	args := []string{"run", "--store", filepath.Join(t.TempDir(), "store"), "--listen", "none",
		"--script", script, "--tools", "Bash", "--root", t.TempDir(), "read it"}
	r := runWithin(t, 45*time.Second, nil, "loop", append(args, "--sandbox", "bubblewrap")...)
	if strings.Contains(r.stderr, "does not work here") {
		t.Skipf("bubblewrap does not work here: %s", r.stderr)
	}
	if r.code != 0 || strings.Contains(r.stdout, "top secret") || !strings.Contains(r.stdout, "No such file") {
		t.Fatalf("sandboxed: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	// Without the sandbox (the default) the same command reads it.
	r = runWithin(t, 45*time.Second, nil, "loop", args...)
	if r.code != 0 || !strings.Contains(r.stdout, "top secret") {
		t.Fatalf("unsandboxed: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

// A bad --sandbox is a usage mistake (exit 2), and so is --sandbox with an
// agent definitions file (the file says it); nothing is written.
func TestLoopSandboxFlagMistakes(t *testing.T) {
	agentsFile := filepath.Join(t.TempDir(), "agents.yaml")
	if err := os.WriteFile(agentsFile, []byte("agents:\n  - id: demo\n    model: scripted:demo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(t.TempDir(), "store")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--store", store, "--tools", "Bash", "--sandbox", "chroot", "hi"}, `unknown sandbox "chroot"`},
		{[]string{"run", "--store", store, "--tools", "Bash", "--sandbox-network", "hi"}, "sandbox_network is set without a sandbox"},
		{[]string{"run", "--store", store, "--agents", agentsFile, "--sandbox", "bubblewrap", "hi"}, "with --agents FILE the file does"},
		{[]string{"serve", "--store", store, "--agents", agentsFile, "--sandbox-network"}, "with --agents FILE the file does"},
	} {
		r := runWithin(t, 45*time.Second, nil, "loop", tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("loop %q: exit %d, stderr %q; want exit 2 saying %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Fatalf("a refused command created the store: %v", err)
	}
}
