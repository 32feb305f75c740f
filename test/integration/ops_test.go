package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// httpGet GETs url and returns the status and body.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The processes a platform runs: a server and a worker with --log-format
// json write only JSON records on stderr (what they say as they start and
// stop among them), answer their probes over HTTP, and stop on SIGTERM,
// the worker draining first.
func TestProbesAndJSONLogsOfProcesses(t *testing.T) {
	listen, serverAdmin, workerAdmin := freeAddr(t), freeAddr(t), freeAddr(t)
	url := "nats://" + listen
	server, serverOut := start(t, "loop", "server", "--store", filepath.Join(t.TempDir(), "store"), "--listen", listen,
		"--metrics", serverAdmin, "--log-format", "json")
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(serverOut.String(), "interrupt to stop") }, "loop server: %s", serverOut)
	worker, workerOut := start(t, "loop", "serve", "--nats", url, "--metrics", workerAdmin, "--log-format", "json", "--drain-timeout", "10s")
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(workerOut.String(), "taking runs") }, "loop serve: %s", workerOut)

	for _, admin := range []string{serverAdmin, workerAdmin} {
		if code, body := httpGet(t, "http://"+admin+"/healthz"); code != http.StatusOK {
			t.Fatalf("%s/healthz: %d %q", admin, code, body)
		}
		if code, body := httpGet(t, "http://"+admin+"/readyz"); code != http.StatusOK || !strings.HasSuffix(body, "ready\n") {
			t.Fatalf("%s/readyz: %d %q", admin, code, body)
		}
	}
	if _, body := httpGet(t, "http://"+serverAdmin+"/metrics"); !strings.Contains(body, `hookbus_build_info{`) {
		t.Fatalf("loop server's metrics lack hookbus_build_info:\n%.500s", body)
	}
	if r := run(t, "loop", "submit", "--nats", url, "--wait", "What is 6*7?"); r.code != 0 || !strings.Contains(r.stdout, "6*7 = 42") {
		t.Fatalf("a run on the worker: %d %s %s", r.code, r.stdout, r.stderr)
	}

	if err := worker.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := worker.Wait(); err != nil {
		t.Fatalf("loop serve on SIGTERM: %v\n%s", err, workerOut)
	}
	if err := server.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := server.Wait(); err != nil {
		t.Fatalf("loop server on SIGTERM: %v\n%s", err, serverOut)
	}
	for name, out := range map[string]string{"loop server": serverOut.String(), "loop serve": workerOut.String()} {
		var msgs []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var rec struct {
				Time  time.Time `json:"time"`
				Level string    `json:"level"`
				Msg   string    `json:"msg"`
			}
			if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Time.IsZero() || rec.Level == "" {
				t.Errorf("%s wrote a line that is not a JSON log record (%v): %s", name, err, line)
				continue
			}
			msgs = append(msgs, rec.Msg)
		}
		all := strings.Join(msgs, "\n")
		want := []string{"loop server: bus: an embedded server", "loop server: listening on " + url, "loop server: stopped"}
		if name == "loop serve" {
			want = []string{"loop serve: bus " + url, "loop serve: taking runs for agent demo", "loop serve: draining (at most 10s)", "loop serve: drained"}
		}
		for _, w := range want {
			if !strings.Contains(all, w) {
				t.Errorf("%s did not say %q:\n%s", name, w, all)
			}
		}
	}
}

// observer checkpointer serves its probes on --metrics, logs JSON with
// --log-format json, and on SIGTERM checkpoints what it read and stops.
func TestCheckpointerProbesAndJSONLogs(t *testing.T) {
	listen, admin := freeAddr(t), freeAddr(t)
	url := "nats://" + listen
	server, serverOut := start(t, "loop", "server", "--store", filepath.Join(t.TempDir(), "store"), "--listen", listen)
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(serverOut.String(), "interrupt to stop") }, "loop server: %s", serverOut)
	defer func() { _ = server.Process.Signal(syscall.SIGTERM); _ = server.Wait() }()
	key := filepath.Join(t.TempDir(), "log.key")
	if r := run(t, "observer", "keygen", "--name", "ops.example/hookbus", "--out", key); r.code != 0 {
		t.Fatalf("keygen: %d %s", r.code, r.stderr)
	}
	if r := run(t, "loop", "run", "--nats", url, "What is 6*7?"); r.code != 0 {
		t.Fatalf("a run: %d %s", r.code, r.stderr)
	}
	cp, out := start(t, "observer", "checkpointer", "--nats", url, "--key", key, "--state", filepath.Join(filepath.Dir(key), "log.checkpoint"), "--interval", "100ms", "--metrics", admin, "--log-format", "json")
	waitFor(t, 30*time.Second, func() bool {
		resp, err := http.Get("http://" + admin + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, "observer checkpointer's /readyz: %s", out)
	if code, body := httpGet(t, "http://"+admin+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(out.String(), "checkpoint stored") }, "a checkpoint: %s", out)
	if err := cp.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cp.Wait(); err != nil {
		t.Fatalf("observer checkpointer on SIGTERM: %v\n%s", err, out)
	}
	var msgs []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var rec struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Level == "" {
			t.Errorf("a line that is not a JSON log record (%v): %s", err, line)
			continue
		}
		msgs = append(msgs, rec.Msg)
	}
	all := strings.Join(msgs, "\n")
	for _, w := range []string{"probes on http://" + admin + "/healthz", "checkpointing HOOKBUS_EVENTS on " + url, "checkpoint stored", "checkpointed 16 messages"} {
		if !strings.Contains(all, w) {
			t.Errorf("observer checkpointer did not say %q:\n%s", w, all)
		}
	}
}
