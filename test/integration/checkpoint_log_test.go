package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestCheckpointerKeepsItsLog: on a server with deploy/nats' accounts, the
// checkpointer (its own NATS user) checkpoints two runs and saves its last
// checkpoint in its state file (the default one). The server's admin, who
// does not hold the log's key, deletes HOOKBUS_EVENTS and
// HOOKBUS_CHECKPOINTS, provisions them again and records another history;
// the checkpointer, restarted, refuses to sign a new log over the one it
// signed, so verify --checkpoint latest has nothing to pass. Only with
// --new-log REASON does it start one, which the new log records; verify
// then passes saying it trusts the server and naming the new log, and
// fails against the checkpoint the checkpointer had saved.
func TestCheckpointerKeepsItsLog(t *testing.T) {
	url := deployConf(t)
	admin, loopUser, auditor, cpUser := url("admin", "admin-change-me"), url("loop", "loop-change-me"), url("auditor", "auditor-change-me"), url("checkpointer", "checkpointer-change-me")
	dir := t.TempDir()
	in := runOpts{dir: dir, env: []string{"XDG_STATE_HOME=" + filepath.Join(dir, "checkpointer-disk")}}
	mustRun := func(what string, r result) result {
		t.Helper()
		if r.code != 0 {
			t.Fatalf("%s: %d\n%s%s", what, r.code, r.stdout, r.stderr)
		}
		return r
	}
	provision := func() { mustRun("provision", runWith(t, in, "observer", "provision", "--nats", admin)) }
	loopRun := func(session string) {
		mustRun("loop run", runWith(t, in, "loop", "run", "--nats", loopUser, "--session", session, "what is 6*7?"))
	}
	provision()
	loopRun("s1")
	loopRun("s1")
	mustRun("keygen", runWith(t, in, "observer", "keygen", "--name", "example.com/hookbus", "--out", "log.key"))
	checkpointer := func(extra ...string) result {
		return runWith(t, in, "observer", append([]string{"checkpointer", "--nats", cpUser, "--key", "log.key", "--once", "--every", "10"}, extra...)...)
	}
	first := mustRun("checkpointer", checkpointer())
	if !strings.Contains(first.stderr, "checkpointed 32 messages") {
		t.Fatalf("checkpointer:\n%s", first.stderr)
	}
	note := mustRun("checkpoint --note", runWith(t, in, "observer", "checkpoint", "--nats", auditor, "--note"))
	kept := filepath.Join(dir, "kept.checkpoint") // what an auditor keeps
	if err := os.WriteFile(kept, []byte(note.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	verify := []string{"verify", "--nats", auditor, "--checkpoint", "latest", "--checkpoint-key", "log.key.pub"}
	mustRun("verify", runWith(t, in, "observer", verify...))

	// The admin replaces the history: both streams deleted and made again.
	nc, err := nats.Connect(admin)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, s := range []string{"HOOKBUS_EVENTS", "HOOKBUS_CHECKPOINTS"} {
		if err := js.DeleteStream(ctx, s); err != nil {
			t.Fatalf("delete %s as admin: %v", s, err)
		}
	}
	provision()
	loopRun("s2")

	refused := checkpointer()
	if refused.code != 1 || !strings.Contains(refused.stderr, "--new-log") || !strings.Contains(refused.stderr, "size 32") {
		t.Fatalf("the checkpointer over a replaced log: %d\n%s", refused.code, refused.stderr)
	}
	if r := runWith(t, in, "observer", verify...); r.code == 0 {
		t.Fatalf("verify --checkpoint latest over a replaced log passed:\n%s%s", r.stdout, r.stderr)
	}
	// What it refused over is in its state file, the default one: the
	// checkpoint the auditor kept.
	states, _ := filepath.Glob(filepath.Join(dir, "checkpointer-disk", "hookbus", "checkpointer", "*.checkpoint"))
	if len(states) != 1 {
		t.Fatalf("the checkpointer's state files: %v", states)
	}
	if saved, err := os.ReadFile(states[0]); err != nil || string(saved) != note.stdout {
		t.Fatalf("the state file holds %q (%v), the last checkpoint was %q", saved, err, note.stdout)
	}

	// The operator's decision, recorded.
	const reason = "store rebuilt after the outage of ticket 42"
	mustRun("checkpointer --new-log", checkpointer("--new-log", reason))
	ok := mustRun("verify the new log", runWith(t, in, "observer", verify...))
	if !strings.Contains(ok.stderr, "warning: no --witness-key and no saved checkpoint: this trusts the server") ||
		!strings.Contains(ok.stdout, "note: trusts_server") || !strings.Contains(ok.stdout, "note: new_log") || !strings.Contains(ok.stdout, reason) {
		t.Fatalf("verify the new log:\n%s%s", ok.stdout, ok.stderr)
	}
	asJSON := mustRun("verify --json", runWith(t, in, "observer", append(verify, "--json")...))
	if !strings.Contains(asJSON.stdout, `"trusts_server":true`) {
		t.Fatalf("verify --json:\n%s", asJSON.stdout)
	}
	list := mustRun("checkpoint --all", runWith(t, in, "observer", "checkpoint", "--nats", auditor, "--all", "--key", "log.key.pub"))
	if !strings.Contains(list.stdout, "a new log over a previous one") || !strings.Contains(list.stdout, reason) {
		t.Fatalf("checkpoint --all:\n%s", list.stdout)
	}
	against := runWith(t, in, "observer", "verify", "--nats", auditor, "--checkpoint", kept, "--checkpoint-key", "log.key.pub")
	if against.code != 1 || !strings.Contains(against.stdout, "FAILED  stream") || strings.Contains(against.stderr, "trusts the server") {
		t.Fatalf("verify against the kept checkpoint: %d\n%s%s", against.code, against.stdout, against.stderr)
	}
}
