package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
)

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// background runs "loop ARGS..." until the test ends, returning its
// stderr and a func that stops it (as SIGTERM does) and returns its exit
// code.
func background(t *testing.T, args ...string) (*bustest.Buffer, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut bustest.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, strings.NewReader(""), &out, &errOut) }()
	stopped, code := false, 0
	stop := func() int {
		if !stopped {
			cancel()
			select {
			case code = <-done:
			case <-time.After(30 * time.Second):
				t.Errorf("loop %s did not stop when told to", args[0])
			}
			stopped = true
		}
		return code
	}
	t.Cleanup(func() { stop() })
	return &errOut, stop
}

// get GETs url with the Host header host ("" for the URL's).
func get(t *testing.T, url, host string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// loop server --metrics serves /healthz and /readyz to anyone (a kubelet
// sends the pod's address as Host, and no token), and /metrics, with
// hookbus_build_info, only as any metrics endpoint is served.
func TestServerProbesAndMetrics(t *testing.T) {
	listen, admin := freeAddr(t), freeAddr(t)
	said, stop := background(t, "server", "--store", t.TempDir(), "--listen", listen, "--metrics", admin)
	bustest.Eventuallyf(t, 30*time.Second, func() bool { return strings.Contains(said.String(), "probes on") }, "loop server to start: %s", said)
	base := "http://" + admin
	if code, body := get(t, base+"/healthz", "10.1.2.3:9466"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	if code, body := get(t, base+"/readyz", "10.1.2.3:9466"); code != http.StatusOK || body != "ok server\nok nats\nok stream\nready\n" {
		t.Fatalf("/readyz: %d %q", code, body)
	}
	if code, body := get(t, base+"/metrics", ""); code != http.StatusOK || !strings.Contains(body, "hookbus_build_info{") || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("/metrics: %d %.300s", code, body)
	}
	if code, _ := get(t, base+"/metrics", "10.1.2.3:9466"); code != http.StatusMisdirectedRequest {
		t.Fatalf("/metrics for another host: %d, want 421", code)
	}
	if code := stop(); code != exitOK {
		t.Fatalf("loop server stopped with %d: %s", code, said)
	}
	if !strings.Contains(said.String(), "loop server: stopped") {
		t.Fatalf("loop server did not say it stopped: %s", said)
	}
}

// A worker serves its probes beside its metrics: ready once it takes runs
// (its consumer bound); told to stop, it drains within --drain-timeout
// and says so, in JSON with --log-format json. (That /readyz fails while
// draining is cmd/internal/health's TestProbes.)
func TestServeProbesDrainAndJSONLogs(t *testing.T) {
	srv, _ := bustest.Start(t, bustest.WithListener())
	admin := freeAddr(t)
	said, stop := background(t, "serve", "--nats", srv.ClientURL(), "--metrics", admin, "--drain-timeout", "7s", "--log-format", "json")
	bustest.Eventuallyf(t, 30*time.Second, func() bool { return strings.Contains(said.String(), "taking runs") }, "loop serve to start: %s", said)
	if code, body := get(t, "http://"+admin+"/readyz", ""); code != http.StatusOK || !strings.Contains(body, "ok consumer\n") {
		t.Fatalf("/readyz: %d %q", code, body)
	}
	if code := stop(); code != exitOK {
		t.Fatalf("loop serve stopped with %d: %s", code, said)
	}
	lines := strings.Split(strings.TrimSpace(said.String()), "\n")
	for _, want := range []string{`"msg":"loop serve: bus ` + srv.ClientURL(), `"msg":"loop serve: taking runs for agent demo`, `"msg":"loop serve: draining (at most 7s)`, `"msg":"loop serve: drained in `} {
		found := false
		for _, l := range lines {
			found = found || strings.Contains(l, want)
		}
		if !found {
			t.Errorf("no line %s:\n%s", want, said)
		}
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, `{"time":`) || !strings.Contains(l, `"level":`) {
			t.Errorf("a line that is not a JSON log record: %s", l)
		}
	}
}

// A worker or a gateway given no bus refuses to start: an embedded server
// in a pod loses its data at the next restart.
func TestLongRunningNeedsABus(t *testing.T) {
	t.Setenv("NATS_URL", "")
	t.Setenv("NATS_CONTEXT", "")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, args := range [][]string{{"serve"}, {"gateway", "--listen", "127.0.0.1:0"}} {
		code, _, stderr := loopRun(t, args...)
		if code != exitUsage || !strings.Contains(stderr, "no bus given: give --nats URL (or $NATS_URL), --context NAME (or $NATS_CONTEXT), or --embedded") {
			t.Errorf("loop %v: %d %s", args, code, stderr)
		}
	}
	code, _, stderr := loopRun(t, "serve", "--embedded", "--nats", "nats://127.0.0.1:4222")
	if code != exitUsage || !strings.Contains(stderr, "--embedded runs a server in this process: give it no --nats or --context") {
		t.Errorf("loop serve --embedded --nats: %d %s", code, stderr)
	}
}

// A run whose embedded server finds its address held by a server attaches
// to that server, saying so, instead of failing.
func TestRunAttachesToTheServerOnItsAddress(t *testing.T) {
	listen := freeAddr(t)
	said, _ := background(t, "server", "--store", t.TempDir(), "--listen", listen)
	bustest.Eventuallyf(t, 30*time.Second, func() bool { return strings.Contains(said.String(), "interrupt to stop") }, "loop server to start: %s", said)
	code, stdout, stderr := loopRun(t, "run", "--store", t.TempDir(), "--listen", listen, "What is 6*7?")
	if code != exitOK || !strings.Contains(stdout, "6*7 = 42") {
		t.Fatalf("loop run: %d %s %s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "loop run: bus nats://"+listen+" (a server already listens on "+listen+": attached to it instead of starting one on --store ") {
		t.Fatalf("loop run does not say it attached: %s", stderr)
	}
}

// loop keygen --out creates the key's directory, for its owner only.
func TestKeygenCreatesTheDirectory(t *testing.T) {
	out := filepath.Join(t.TempDir(), "etc", "hookbus", "signing.nk")
	code, stdout, stderr := loopRun(t, "keygen", "--out", out)
	if code != exitOK || !strings.HasPrefix(stdout, "A") || !strings.Contains(stderr, "created the directory "+filepath.Dir(out)+" (mode 0700)") {
		t.Fatalf("keygen: %d %q %s", code, stdout, stderr)
	}
	st, err := os.Stat(filepath.Dir(out))
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("the directory: %v %v", st.Mode(), err)
	}
	if st, err := os.Stat(out); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the key: %v", err)
	}
	// Where the directory cannot be made, it says why.
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = loopRun(t, "keygen", "--out", filepath.Join(file, "signing.nk"))
	if code != exitUsage || !strings.Contains(stderr, file+" is not a directory") {
		t.Fatalf("keygen into a file: %d %s", code, stderr)
	}
}

// --version names the module's version and the toolchain; completion
// scripts come for bash, zsh and fish.
func TestVersionAndCompletion(t *testing.T) {
	code, stdout, _ := loopRun(t, "--version")
	if code != exitOK || !strings.HasPrefix(stdout, "loop ") || !strings.Contains(stdout, " go1.") {
		t.Fatalf("--version: %d %q", code, stdout)
	}
	for shell, want := range map[string]string{"bash": "__start_loop", "zsh": "#compdef loop", "fish": "complete -c loop"} {
		code, stdout, stderr := loopRun(t, "completion", shell)
		if code != exitOK || !strings.Contains(stdout, want) {
			t.Errorf("completion %s: %d %.200s %s", shell, code, stdout, stderr)
		}
	}
}
