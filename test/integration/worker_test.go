package integration

import (
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// A worker (loop serve, its own embedded server listening on loopback), a
// submitter that waits for the answer, and a live observer, as three
// processes.
func TestServeSubmitTail(t *testing.T) {
	addr := freeAddr(t)
	url := "nats://" + addr
	store := filepath.Join(t.TempDir(), "store")
	_, serveOut := start(t, "loop", "serve", "--store", store, "--listen", addr, "--concurrency", "2", "--agent", "support")
	bustest.Eventuallyf(t, 30*time.Second, func() bool { return strings.Contains(serveOut.String(), "taking runs") },
		"loop serve to start; output so far:\n%s", serveOut)

	// --since makes the tail independent of how fast it connects: it reads
	// from a minute back, then follows.
	_, tailOut := start(t, "observer", "tail", "--nats", url, "--stage", "run.completed", "--since", "1m")
	first := run(t, "loop", "submit", "--nats", url, "--agent", "support", "--session", "s1", "--wait", "first")
	if first.code != 0 || !strings.Contains(first.stdout, "(You asked: first)") {
		t.Fatalf("submit --wait: %d\n%s\n%s\nworker:\n%s", first.code, first.stdout, first.stderr, serveOut)
	}
	second := run(t, "loop", "submit", "--nats", url, "--agent", "support", "--session", "s1", "--wait", "second")
	if second.code != 0 || !strings.Contains(second.stdout, "(You asked: second)") {
		t.Fatalf("second submit: %d %s %s", second.code, second.stdout, second.stderr)
	}
	bustest.Eventuallyf(t, 30*time.Second, func() bool {
		out := tailOut.String()
		return strings.Contains(out, `(You asked: first)`) && strings.Contains(out, `(You asked: second)`)
	}, "observer tail to show both runs' ends; it shows:\n%s", tailOut)
	if strings.Contains(tailOut.String(), "step.started") {
		t.Fatalf("tail --stage run.completed printed other stages:\n%s", tailOut)
	}

	// The worker rebuilt the session: the second run saw the first.
	rep := run(t, "observer", "replay", "--nats", url, "--session", "s1", "--stage", "run.started", "--json")
	evs := jsonEvents(t, rep.stdout)
	if len(evs) != 2 || !strings.Contains(string(evs[1].Data), `"history_messages":5`) {
		t.Fatalf("run.started events: %d %s", len(evs), rep.stdout)
	}

	// Without --wait, submit prints the run id at once.
	quick := run(t, "loop", "submit", "--nats", url, "--agent", "support", "third")
	if quick.code != 0 || len(strings.TrimSpace(quick.stdout)) != 26 {
		t.Fatalf("submit without --wait: %d %q %s", quick.code, quick.stdout, quick.stderr)
	}
}
