//go:build unix

package command_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/hooks/command"
	"github.com/hookbus/hookbus/interceptors"
)

// alive reports whether pid is a live process (a zombie is dead: it only
// waits to be reaped).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !os.IsNotExist(err) // no /proc: trust kill
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	bustest.Eventuallyf(t, 20*time.Second, cond, "%s", what)
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %q", path, b)
	}
	return pid
}

// stubborn is a hook that ignores SIGTERM and forks a child that ignores
// it too, both running until killed.
const stubborn = `trap '' TERM
sh -c 'trap "" TERM; echo $$ > child.pid.tmp; mv child.pid.tmp child.pid; while :; do sleep 1; done' &
echo $$ > parent.pid.tmp; mv parent.pid.tmp parent.pid
while :; do sleep 1; done
`

// When the hook's time is up, its whole process group goes: the script
// that ignores SIGTERM and the child it forked are killed (SIGKILL after
// the grace), and Intercept returns.
func TestKillsProcessGroup(t *testing.T) {
	root := t.TempDir()
	script(t, root, "stubborn.sh", stubborn)
	h := newHook(t, command.Config{Root: root, KillGrace: 100 * time.Millisecond}, claudecode.PreToolUse, `{"type":"command","command":"./stubborn.sh"}`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ev := toolBefore(t, "Bash", `{}`)
	done := make(chan error, 1)
	go func() {
		_, err := h.Intercept(ctx, &interceptors.Request{Stage: ev.Stage, Event: ev})
		done <- err
	}()
	exists := func(name string) bool { _, err := os.Stat(filepath.Join(root, name)); return err == nil }
	eventually(t, "the hook and its child started", func() bool { return exists("parent.pid") && exists("child.pid") })
	parent, child := readPID(t, filepath.Join(root, "parent.pid")), readPID(t, filepath.Join(root, "child.pid"))
	if !alive(parent) || !alive(child) {
		t.Fatal("the hook ended on its own")
	}
	cancel() // as the chain's deadline does
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Intercept: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Intercept did not return after its ctx ended")
	}
	eventually(t, "the hook and its child are gone", func() bool { return !alive(parent) && !alive(child) })
}

// At its deadline the hook is killed and the failure is a timeout.
func TestTimeout(t *testing.T) {
	root := t.TempDir()
	script(t, root, "stubborn.sh", stubborn)
	h := newHook(t, command.Config{Root: root, KillGrace: 50 * time.Millisecond}, claudecode.PreToolUse, `{"type":"command","command":"./stubborn.sh"}`)
	_, err := intercept(t, h, toolBefore(t, "Bash", `{}`), 300*time.Millisecond)
	if !errors.Is(err, interceptors.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want a timeout", err)
	}
	if interceptors.FailureKind(err) != "timeout" {
		t.Fatalf("kind %s", interceptors.FailureKind(err))
	}
}

// Processes a hook leaves in its group when it exits are killed with it.
func TestLeftoversKilled(t *testing.T) {
	root := t.TempDir()
	h := newHook(t, command.Config{Root: root, KillGrace: 100 * time.Millisecond}, claudecode.PreToolUse,
		`{"type":"command","command":"sh -c 'echo $$ > bg.pid; exec sleep 600' > /dev/null 2>&1 & while [ ! -s bg.pid ]; do sleep 0.01; done; echo done"}`)
	if _, err := intercept(t, h, toolBefore(t, "Bash", `{}`), 20*time.Second); err != nil {
		t.Fatal(err)
	}
	pid := readPID(t, filepath.Join(root, "bg.pid"))
	eventually(t, "the background process is gone", func() bool { return !alive(pid) })
}
