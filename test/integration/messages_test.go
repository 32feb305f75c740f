package integration

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/nats-io/nats.go/jetstream"
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

// loop run (as make run runs it) on an address held by something that is
// not a hookbus bus says so, and provisions nothing into it.
func TestRunOnSomebodyElsesPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r := run(t, "loop", "run", "--store", filepath.Join(t.TempDir(), "s"), "--listen", ln.Addr().String(), "hi")
	if r.code == 0 || !strings.Contains(r.stderr, "not a NATS server listens there") || !strings.Contains(r.stderr, "LISTEN=") {
		t.Fatalf("loop run on a port that is not NATS: %d\n%s", r.code, r.stderr)
	}

	srv, nc := bustest.Start(t, bustest.WithListener())
	addr := strings.TrimPrefix(srv.ClientURL(), "nats://")
	r = run(t, "loop", "run", "--store", filepath.Join(t.TempDir(), "s"), "--listen", addr, "hi")
	if r.code == 0 || !strings.Contains(r.stderr, "it is not a hookbus bus") || !strings.Contains(r.stderr, "observer provision --nats") {
		t.Fatalf("loop run on a NATS server that is not a hookbus bus: %d\n%s", r.code, r.stderr)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	streams := js.StreamNames(context.Background())
	for name := range streams.Name() {
		t.Fatalf("stream %s provisioned into somebody else's server", name)
	}
}

// observer approve on a coding agent's permission request says the answer
// goes to the agent's waiting hook, not that a worker resumes anything.
func TestApproveCodingAgentRequest(t *testing.T) {
	addr := freeAddr(t)
	url := "nats://" + addr
	_, srvOut := start(t, "loop", "server", "--store", filepath.Join(t.TempDir(), "store"), "--listen", addr)
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(srvOut.String(), "listening on "+url) }, "loop server: %s", srvOut)
	perm := `{"session_id": "cc-perm", "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp", "permission_mode": "default", "hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_input": {"command": "ls"}}`
	done := make(chan result, 1)
	go func() { done <- agentHookProc(t, perm, "--harness", "claude", "--nats", url, "--timeout", "50s") }()
	var runID string
	waitFor(t, 30*time.Second, func() bool {
		r := run(t, "observer", "approvals", "--nats", url, "--json")
		i := strings.Index(r.stdout, `"RunID":"`)
		if i < 0 {
			return false
		}
		runID = r.stdout[i+len(`"RunID":"`):]
		runID = runID[:strings.Index(runID, `"`)]
		return true
	}, "the permission request to wait for an answer")
	ok := run(t, "observer", "approve", runID, "--nats", url)
	if ok.code != 0 || strings.Contains(ok.stdout, "worker") || !strings.Contains(ok.stdout, "the coding agent that asked") {
		t.Fatalf("observer approve: %d\n%s\n%s", ok.code, ok.stdout, ok.stderr)
	}
	if r := <-done; r.code != 0 || !strings.Contains(r.stdout, "allow") {
		t.Fatalf("the hook's answer: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
