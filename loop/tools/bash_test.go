package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/loop/tools"
)

func skipUnlessUnix(t *testing.T) {
	t.Helper()
	if !unixShell {
		t.Skip("Bash tests need a Unix shell and process groups")
	}
}

func newBash(t *testing.T, cfg tools.BashConfig) (*tools.Bash, string) {
	t.Helper()
	skipUnlessUnix(t)
	if cfg.Root == "" {
		cfg.Root = t.TempDir()
	}
	if cfg.KillGrace == 0 {
		cfg.KillGrace = 200 * time.Millisecond
	}
	b, err := tools.NewBash(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b, cfg.Root
}

// eventually polls cond until it holds or 10 seconds pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	bustest.Eventuallyf(t, 10*time.Second, cond, "%s", what)
}

// readPID reads the pid a command wrote to a file of the root.
func readPID(t *testing.T, root, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatalf("the command did not write %s: %v", name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s holds %q", name, b)
	}
	return pid
}

// stubborn starts, in the background, a child that ignores SIGTERM and
// writes its pid to child.pid, then waits for it.
const stubborn = `sh -c 'trap "" TERM; exec sleep 300' & echo $! > child.pid; wait`

func TestBashRunsInRoot(t *testing.T) {
	b, root := newBash(t, tools.BashConfig{})
	got, err := call(t, b, obj{"command": "pwd", "description": "Print the directory"})
	want, _ := filepath.EvalSymlinks(root)
	if err != nil || got != want && got != root {
		t.Fatalf("pwd = %q, %v; want %q", got, err, root)
	}
	got, err = call(t, b, obj{"command": "echo out; echo err >&2; echo out2"})
	if err != nil || got != "out\nerr\nout2" {
		t.Fatalf("interleaved output = %q, %v", got, err)
	}
	got, err = call(t, b, obj{"command": "true"})
	if err != nil || got != "(no output)" {
		t.Fatalf("no output = %q, %v", got, err)
	}
}

func TestBashExitCode(t *testing.T) {
	b, _ := newBash(t, tools.BashConfig{})
	got, err := call(t, b, obj{"command": "echo oops; echo bad >&2; exit 3"})
	var ce *tools.CommandError
	if !errors.As(err, &ce) || !errors.Is(err, tools.ErrExitStatus) || ce.ExitCode != 3 {
		t.Fatalf("exit 3 = %q, %v; want a *CommandError with code 3", got, err)
	}
	if err.Error() != "Exit code 3\noops\nbad" {
		t.Fatalf("message = %q", err.Error())
	}
}

func TestBashEnvironmentIsNotInherited(t *testing.T) {
	skipUnlessUnix(t)
	t.Setenv("OPENAI_API_KEY", "sk-test-must-not-leak")
	t.Setenv("HOOKBUS_TEST_VISIBLE", "listed")
	t.Setenv("HOOKBUS_TEST_HIDDEN", "unlisted")
	b, _ := newBash(t, tools.BashConfig{Env: []string{"HOOKBUS_TEST_VISIBLE", "FIXED=set by config", "HOOKBUS_TEST_UNSET"}})
	got, err := call(t, b, obj{"command": "env"})
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"OPENAI_API_KEY", "sk-test-must-not-leak", "HOOKBUS_TEST_HIDDEN", "HOOKBUS_TEST_UNSET"} {
		if strings.Contains(got, leak) {
			t.Errorf("the command sees %s:\n%s", leak, got)
		}
	}
	for _, want := range []string{"HOOKBUS_TEST_VISIBLE=listed", "FIXED=set by config", "PATH="} {
		if !strings.Contains(got, want) {
			t.Errorf("the command does not see %s:\n%s", want, got)
		}
	}
	if _, err := tools.NewBash(tools.BashConfig{Root: t.TempDir(), Env: []string{"BAD-NAME"}}); !errors.Is(err, tools.ErrInvalidConfig) {
		t.Errorf("NewBash with a bad Env name = %v, want ErrInvalidConfig", err)
	}
}

func TestBashOutputCap(t *testing.T) {
	b, _ := newBash(t, tools.BashConfig{MaxOutput: 100})
	// Ten lines of 99 digits and a newline: 1000 characters.
	got, err := call(t, b, obj{"command": `for i in 1 2 3 4 5 6 7 8 9 10; do printf '%099d\n' $i; done`})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("0", 98) + "1\n\n... [9 lines truncated] ...\n(output cut at 100 characters: 900 more characters were left out)"
	if got != want {
		t.Fatalf("capped output =\n%q\nwant\n%q", got, want)
	}
	// Ten megabytes cost no more than the cap.
	got, err = call(t, b, obj{"command": `head -c 10000000 /dev/zero | tr '\0' 'x'`})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, strings.Repeat("x", 100)+"\n\n... [1 lines truncated] ...") || !strings.HasSuffix(got, "9999900 more characters were left out)") {
		t.Fatalf("capped 10 MB output = %q", got)
	}
	// A failing command's output is capped the same way.
	_, err = call(t, b, obj{"command": `printf '%0200d' 0; exit 1`})
	if !errors.Is(err, tools.ErrExitStatus) || !strings.Contains(err.Error(), "100 more characters were left out") {
		t.Fatalf("failing command = %v", err)
	}
}

func TestBashTimeoutKillsProcessGroup(t *testing.T) {
	b, root := newBash(t, tools.BashConfig{})
	got, err := call(t, b, obj{"command": stubborn, "timeout": 1500})
	if !errors.Is(err, tools.ErrTimeout) {
		t.Fatalf("Bash = %q, %v; want ErrTimeout", got, err)
	}
	if !strings.HasPrefix(err.Error(), "Command timed out after ") {
		t.Errorf("message = %q", err)
	}
	pid := readPID(t, root, "child.pid")
	eventually(t, "the child that ignores SIGTERM is still alive", func() bool { return processGone(pid) })
}

func TestBashCancelKillsProcessGroup(t *testing.T) {
	b, root := newBash(t, tools.BashConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := b.Call(ctx, json.RawMessage(`{"command":`+strconv.Quote(stubborn)+`}`))
		done <- err
	}()
	eventually(t, "the command did not start its child", func() bool {
		b, err := os.ReadFile(filepath.Join(root, "child.pid"))
		return err == nil && strings.HasSuffix(string(b), "\n")
	})
	pid := readPID(t, root, "child.pid")
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Bash after cancel = %v, want context.Canceled", err)
	}
	eventually(t, "the child that ignores SIGTERM is still alive", func() bool { return processGone(pid) })
}

func TestBashKillsLeftoverBackgroundProcesses(t *testing.T) {
	b, root := newBash(t, tools.BashConfig{})
	got, err := call(t, b, obj{"command": `sleep 300 >/dev/null 2>&1 & echo $! > bg.pid; echo started`})
	if err != nil || got != "started" {
		t.Fatalf("Bash = %q, %v", got, err)
	}
	pid := readPID(t, root, "bg.pid")
	eventually(t, "the background process outlived its command", func() bool { return processGone(pid) })
	// One that keeps the output pipe open does not hold the call either.
	got, err = call(t, b, obj{"command": `sleep 300 & echo $! > bg2.pid; echo started`})
	if err != nil || got != "started" {
		t.Fatalf("Bash = %q, %v", got, err)
	}
	pid = readPID(t, root, "bg2.pid")
	eventually(t, "the background process outlived its command", func() bool { return processGone(pid) })
}

func TestBashSpec(t *testing.T) {
	b, _ := newBash(t, tools.BashConfig{})
	s := b.Spec()
	if s.Name != "Bash" || s.Idempotent {
		t.Fatalf("spec = %+v; want Bash, not idempotent", s)
	}
	var schema struct {
		Properties map[string]struct {
			Maximum int `json:"maximum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(s.Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	if _, ok := schema.Properties["description"]; !ok || schema.Properties["timeout"].Maximum != 600000 || len(schema.Required) != 1 {
		t.Fatalf("schema = %s", s.Parameters)
	}
	idem, _ := newBash(t, tools.BashConfig{Idempotent: true})
	if !idem.Spec().Idempotent {
		t.Fatal("Idempotent: true is not in the spec")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Call(ctx, json.RawMessage(`{"command":"touch ran"}`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Bash with a cancelled ctx = %v", err)
	}
}

func TestBashDoesNotWaitForProcessesThatLeftTheGroup(t *testing.T) {
	b, root := newBash(t, tools.BashConfig{})
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid command")
	}
	// The escaped process holds the output pipe; the call returns after the
	// kill grace all the same, with the output written before.
	got, err := call(t, b, obj{"command": `setsid sh -c 'echo $$ > escaped.pid; exec sleep 300' & while [ ! -s escaped.pid ]; do sleep 0.01; done; echo done`})
	if err != nil || got != "done" {
		t.Fatalf("Bash = %q, %v", got, err)
	}
	pid := readPID(t, root, "escaped.pid")
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill() // it left the group: the tool cannot reach it, the test cleans up
	}
}
