package integration

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// With deploy/nats' accounts and the real binaries: the loop user cannot
// pause the checkpointer's durable consumer nor the auditor delete it;
// when the admin pauses it, `observer checkpointer` keeps running but its
// /readyz says 503 (paused, then lagging), and `observer verify
// --checkpoint latest` says how far the checkpoints lag and, with
// --max-lag, fails.
func TestPausedCheckpointerIsNotReadyAndVerifySaysSo(t *testing.T) {
	url := deployConf(t)
	admin, loopUser, auditor, ckpt := url("admin", "admin-change-me"), url("loop", "loop-change-me"), url("auditor", "auditor-change-me"), url("checkpointer", "checkpointer-change-me")
	if p := run(t, "observer", "provision", "--nats", admin); p.code != 0 {
		t.Fatalf("provision: %d %s", p.code, p.stderr)
	}
	if r := run(t, "loop", "run", "--nats", loopUser, "--session", "s1", "What is 6*7?"); r.code != 0 {
		t.Fatalf("a run: %d %s", r.code, r.stderr)
	}
	key := filepath.Join(t.TempDir(), "log.key")
	if r := run(t, "observer", "keygen", "--name", "insider.example/hookbus", "--out", key); r.code != 0 {
		t.Fatalf("keygen: %d %s", r.code, r.stderr)
	}
	adminAddr := freeAddr(t)
	_, out := start(t, "observer", "checkpointer", "--nats", ckpt, "--key", key, "--interval", "100ms", "--max-lag", "1s", "--metrics", adminAddr)
	readyz := func() (int, string) {
		resp, err := http.Get("http://" + adminAddr + "/readyz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		b.Write(buf[:n])
		return resp.StatusCode, b.String()
	}
	waitFor(t, 30*time.Second, func() bool { code, _ := readyz(); return code == http.StatusOK }, "the checkpointer never ready: %s", out)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	jsOf := func(u string) jetstream.JetStream {
		nc, err := nats.Connect(u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		return js
	}
	short, cancelShort := context.WithTimeout(ctx, time.Second)
	defer cancelShort()
	if _, err := jsOf(loopUser).PauseConsumer(short, "HOOKBUS_EVENTS", "hookbus-checkpointer", time.Now().Add(time.Hour)); err == nil {
		t.Fatal("the loop paused the checkpointer")
	}
	short2, cancelShort2 := context.WithTimeout(ctx, time.Second)
	defer cancelShort2()
	if err := jsOf(auditor).DeleteConsumer(short2, "HOOKBUS_EVENTS", "hookbus-checkpointer"); err == nil {
		t.Fatal("the auditor deleted the checkpointer's durable")
	}
	if code, body := readyz(); code != http.StatusOK {
		t.Fatalf("after the loop's and auditor's attempts: /readyz %d %s", code, body)
	}

	// The admin pauses it: the process runs on, not ready.
	if _, err := jsOf(admin).PauseConsumer(ctx, "HOOKBUS_EVENTS", "hookbus-checkpointer", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, func() bool {
		code, body := readyz()
		return code == http.StatusServiceUnavailable && strings.Contains(body, "paused")
	}, "/readyz while paused: %s", out)
	if r := run(t, "loop", "run", "--nats", loopUser, "--session", "s2", "What time is it?"); r.code != 0 {
		t.Fatalf("a run: %d %s", r.code, r.stderr)
	}
	verify := []string{"verify", "--nats", auditor, "--checkpoint", "latest", "--checkpoint-key", key + ".pub"}
	var v result
	waitFor(t, 30*time.Second, func() bool {
		v = run(t, "observer", verify...)
		return v.code == 0 && strings.Contains(v.stdout, "unchecked") && strings.Contains(v.stdout, "the checkpoints lag that far behind")
	}, "verify while the checkpointer is paused: %d\n%s%s", v.code, v.stdout, v.stderr)
	waitFor(t, 30*time.Second, func() bool {
		v = run(t, "observer", append(verify, "--max-lag", "1s")...)
		return v.code == 1 && strings.Contains(v.stdout, "lagging")
	}, "verify --max-lag 1s while the checkpointer is paused: %d\n%s%s", v.code, v.stdout, v.stderr)
}
