package integration

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Ctrl-C on loop submit --wait stops the waiting, not the run: it says so.
func TestSubmitWaitInterrupted(t *testing.T) {
	addr := freeAddr(t)
	url := "nats://" + addr
	_, srvOut := start(t, "loop", "server", "--store", filepath.Join(t.TempDir(), "store"), "--listen", addr)
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(srvOut.String(), "listening on "+url) }, "loop server: %s", srvOut)
	sub, out := start(t, "loop", "submit", "--nats", url, "--session", "later", "--wait", "hello")
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(out.String(), "no worker serves agent demo") }, "submit to wait: %s", out)
	if err := sub.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	_ = sub.Wait()
	if s := out.String(); !strings.Contains(s, "stopped waiting; run ") || !strings.Contains(s, "goes on") || !strings.Contains(s, "--session later") {
		t.Fatalf("submit --wait interrupted:\n%s", s)
	}
}
