//go:build unix

package mcp_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/loop/mcp"
)

func TestStdioServerKilledMidCallIsReportedAndRestarted(t *testing.T) {
	dir := t.TempDir()
	s := connect(t, stdioConfig(t, "files", dir))
	pid := pidOf(t, mustCall(t, s, "pid", `{}`))
	errc := make(chan error, 1)
	go func() {
		_, err := call(t, s, "sleep", `{"ms":600000}`)
		errc <- err
	}()
	bustest.Eventuallyf(t, 20*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(dir, "sleeping"))
		return err == nil
	}, "the sleep call never reached the server")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wantError(t, <-errc, mcp.ErrConnectionLost, "sleep")
	if again := pidOf(t, mustCall(t, s, "pid", `{}`)); again == pid {
		t.Fatal("the server was not restarted")
	}
}

func TestStdioServerKilledBetweenCallsIsRestarted(t *testing.T) {
	s := connect(t, stdioConfig(t, "files", t.TempDir()))
	pid := pidOf(t, mustCall(t, s, "pid", `{}`))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The first call after the kill either notices the dead child and
	// starts a new one, or is sent before the death is seen and fails; the
	// one after it runs on a new child.
	var out string
	for attempt := 1; ; attempt++ {
		var err error
		out, err = call(t, s, "pid", `{}`)
		if err == nil {
			break
		}
		wantError(t, err, mcp.ErrConnectionLost, "pid")
		if attempt == 2 {
			t.Fatalf("no restart after %d calls: %v", attempt, err)
		}
	}
	if pidOf(t, out) == pid {
		t.Fatal("answered by the killed server")
	}
}

func TestStdioServerThatCannotRestartFailsUntilItCan(t *testing.T) {
	work := filepath.Join(t.TempDir(), "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := stdioConfig(t, "files", "")
	cfg.Dir = work
	s := connect(t, cfg)
	pid := pidOf(t, mustCall(t, s, "pid", `{}`))
	// The server's directory goes away and the server dies: it cannot be
	// started again.
	if err := os.Remove(work); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for attempt := 1; ; attempt++ {
		_, err := call(t, s, "pid", `{}`)
		if errors.Is(err, mcp.ErrStart) {
			wantError(t, err, mcp.ErrStart, "pid")
			if !strings.Contains(err.Error(), "work") {
				t.Fatalf("the start error does not say why: %v", err)
			}
			break
		}
		wantError(t, err, mcp.ErrConnectionLost, "pid") // sent before the death was seen
		if attempt == 2 {
			t.Fatalf("no restart attempted after %d calls: %v", attempt, err)
		}
	}
	// Once the directory is back, the next call starts the server.
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	if again := pidOf(t, mustCall(t, s, "pid", `{}`)); again == pid {
		t.Fatal("answered by the killed server")
	}
}
