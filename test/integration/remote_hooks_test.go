package integration

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
)

func waitFor(t *testing.T, d time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	bustest.Eventuallyf(t, d, cond, format, args...)
}

// lazy formats as what its func returns when the message is made.
type lazy func() string

func (l lazy) String() string { return l() }

func payloads[T any](t *testing.T, evs []*events.Event, st events.Stage) []T {
	t.Helper()
	var out []T
	for _, e := range evs {
		if e.Stage != st {
			continue
		}
		var p T
		if err := e.DecodeData(&p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// The loop (loop serve), an interceptor and the CLI that registers it are
// three OS processes; the interceptor is then killed and the loop goes on
// without it (fail-open), recording the failure.
func TestRemoteInterceptorInAnotherProcess(t *testing.T) {
	addr := freeAddr(t)
	url := "nats://" + addr
	store := filepath.Join(t.TempDir(), "store")
	_, serveOut := start(t, "loop", "serve", "--store", store, "--listen", addr, "--agent", "a1,a2")
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(serveOut.String(), "taking runs") }, "loop serve: %s", serveOut)

	add := run(t, "observer", "hooks", "add", "--nats", url, "--stage", "tool.before", "--plugin", "policy", "--tools", "calculator", "--timeout", "2s")
	if add.code != 0 {
		t.Fatalf("observer hooks add: %d %s %s", add.code, add.stdout, add.stderr)
	}
	ic := startInterceptor(t, url, "policy", "deny-calculator")

	// The worker follows the registry; once it has the hook, the calculator
	// is denied by the other process.
	var answer string
	waitFor(t, 60*time.Second, func() bool {
		r := run(t, "loop", "submit", "--nats", url, "--agent", "a1", "--wait", "go")
		answer = r.stdout
		return r.code == 0 && strings.Contains(answer, "forbids calculator")
	}, "a run denied by the remote interceptor; last answer %s", lazy(func() string { return answer }))
	if !strings.Contains(answer, "denied: policy: pid ") || strings.Contains(answer, "= 42") {
		t.Fatalf("answer %q", answer)
	}

	// Kill the interceptor: the next run fails open, and hook.failed says why.
	if err := ic.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = ic.Wait()
	after := run(t, "loop", "submit", "--nats", url, "--agent", "a2", "--wait", "go")
	if after.code != 0 || !strings.Contains(after.stdout, "6*7 = 42") {
		t.Fatalf("run after the interceptor died: %d %q %s", after.code, after.stdout, after.stderr)
	}
	rep := run(t, "observer", "replay", "--nats", url, "--agent", "a2", "--json")
	evs := jsonEvents(t, rep.stdout)
	failed := payloads[events.HookFailed](t, evs, events.StageHookFailed)
	if len(failed) != 1 || failed[0].Plugin != "policy" || failed[0].Kind != events.FailNoResponders || failed[0].Outcome != "failed_open" {
		t.Fatalf("hook.failed after the kill: %+v", failed)
	}
	rep1 := run(t, "observer", "replay", "--nats", url, "--agent", "a1", "--stage", "hook.decided", "--json")
	decided := payloads[events.HookDecided](t, jsonEvents(t, rep1.stdout), events.StageHookDecided)
	last := decided[len(decided)-1]
	if last.Plugin != "policy" || last.Decision != "deny" || !last.Remote {
		t.Fatalf("hook.decided of the remote deny: %+v", last)
	}
}
