package integration

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
)

// examples/python/guard.py, run as its doc says: it denies the calculator,
// and removes its registration when stopped. Skipped without python3 and
// nats-py.
func TestPythonGuard(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("skipped: python3 is not on PATH")
	}
	if err := exec.Command(py, "-c", "import nats").Run(); err != nil {
		t.Skip("skipped: nats-py is not installed (pip install nats-py)")
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "examples", "python", "guard.py")
	addr := freeAddr(t)
	url := "nats://" + addr
	_, srvOut := start(t, "loop", "server", "--store", filepath.Join(t.TempDir(), "store"), "--listen", addr)
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(srvOut.String(), "listening on "+url) }, "loop server: %s", srvOut)

	cmd := exec.Command(py, script)
	cmd.Env = append(cmd.Environ(), "NATS_URL="+url)
	var out bustest.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(out.String(), "serving tool.before") }, "guard.py to serve: %s", &out)
	r := run(t, "loop", "run", "--nats", url, "What is 6*7?")
	if r.code != 0 || !strings.Contains(r.stdout, "the calculator is off today") {
		t.Fatalf("a run with guard.py: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if list := run(t, "observer", "hooks", "list", "--nats", url); strings.Contains(list.stdout, "guard-py") {
		t.Fatalf("guard.py's registration left after it stopped:\n%s\n%s", list.stdout, &out)
	}
}
