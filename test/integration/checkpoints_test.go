package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/embedded"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/tlog"
)

// TestCheckpointsFromTheCommandLine: observer keygen makes a log's key,
// observer checkpointer --once checkpoints the store loop run left, observer
// checkpoint shows the checkpoints, observer verify --checkpoint proves the
// stream against them, observer prove writes a run's proof that
// verify-proof checks offline. Then a whole run is deleted from the store:
// each run's chain still verifies, and verify --checkpoint fails naming
// the deleted run.
func TestCheckpointsFromTheCommandLine(t *testing.T) {
	dir := t.TempDir()
	in := runOpts{dir: dir}
	pub := strings.TrimSpace(runWith(t, in, "loop", "keygen", "--out", "sign.nk").stdout)
	for range 3 {
		if r := runWith(t, in, "loop", "run", "--embedded", "--listen", "none", "--signing-key", "sign.nk", "What time is it?"); r.code != 0 {
			t.Fatalf("run: %d %s", r.code, r.stderr)
		}
	}
	store := filepath.Join(dir, ".hookbus")
	key := runWith(t, in, "observer", "keygen", "--name", "example.com/hookbus", "--out", "log.key")
	vkey := strings.TrimSpace(key.stdout)
	if key.code != 0 || !strings.HasPrefix(vkey, "example.com/hookbus+") {
		t.Fatalf("keygen: %d %q %s", key.code, key.stdout, key.stderr)
	}
	if again := runWith(t, in, "observer", "keygen", "--name", "example.com/hookbus", "--out", "log.key"); again.code != 2 {
		t.Fatalf("keygen over an existing key: exit %d, want 2", again.code)
	}
	if cp := runWith(t, in, "observer", "checkpointer", "--store", store, "--key", "log.key", "--once", "--every", "10"); cp.code != 0 || !strings.Contains(cp.stderr, "checkpointed 48 messages") {
		t.Fatalf("checkpointer: %d\n%s", cp.code, cp.stderr)
	}
	list := runWith(t, in, "observer", "checkpoint", "--store", store, "--all", "--key", "log.key.pub")
	if list.code != 0 || strings.Count(list.stdout, "signed by example.com/hookbus") != 5 {
		t.Fatalf("checkpoint --all: %d\n%s%s", list.code, list.stdout, list.stderr)
	}
	verify := []string{"verify", "--store", store, "--public-key", pub, "--checkpoint", "latest", "--checkpoint-key", "log.key.pub"}
	ok := runWith(t, in, "observer", verify...)
	if ok.code != 0 || !strings.Contains(ok.stdout, "ok      stream example.com/hookbus: checkpoint of size 48") || !strings.Contains(ok.stdout, "5 of 5 stored checkpoints proven") {
		t.Fatalf("verify --checkpoint: %d\n%s%s", ok.code, ok.stdout, ok.stderr)
	}

	runs := strings.Split(strings.TrimSpace(runWith(t, in, "observer", "runs", "--store", store, "--json").stdout), "\n")
	if len(runs) != 3 {
		t.Fatalf("%d runs listed", len(runs))
	}
	first := runIDOf(t, runs[0])
	proof := runWith(t, in, "observer", "prove", "--store", store, "--key", "log.key.pub", first)
	if proof.code != 0 {
		t.Fatalf("prove: %d %s", proof.code, proof.stderr)
	}
	if err := os.WriteFile(filepath.Join(dir, "proof.json"), []byte(proof.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	checked := runWith(t, in, "observer", "verify-proof", "proof.json", "--key", "log.key.pub", "--public-key", pub)
	if checked.code != 0 || !strings.Contains(checked.stdout, "ok  run "+first+": 16 events") || !strings.Contains(checked.stdout, "signed by "+pub) {
		t.Fatalf("verify-proof: %d\n%s%s", checked.code, checked.stdout, checked.stderr)
	}
	partialProofs(t, in, filepath.Join(dir, "proof.json"))
	other := runWith(t, in, "observer", "keygen", "--name", "example.com/hookbus", "--out", "other.key")
	if r := runWith(t, in, "observer", "verify-proof", "proof.json", "--key", "other.key.pub"); r.code != 1 || !strings.Contains(r.stderr, "signature") {
		t.Fatalf("verify-proof with another log's key (%s): %d\n%s", other.stdout, r.code, r.stderr)
	}

	// A whole run deleted: no chain shows it, the checkpoints do.
	gone := runIDOf(t, runs[1])
	deleteRun(t, store, gone)
	chains := runWith(t, in, "observer", "verify", "--store", store, "--public-key", pub)
	if chains.code != 0 || strings.Contains(chains.stdout, gone) {
		t.Fatalf("verify without checkpoints: %d\n%s%s", chains.code, chains.stdout, chains.stderr)
	}
	failed := runWith(t, in, "observer", verify...)
	if failed.code != 1 || !strings.Contains(failed.stdout, "FAILED  stream") || !strings.Contains(failed.stdout, "removed        seqs 17-32") || !strings.Contains(failed.stdout, gone) {
		t.Fatalf("verify --checkpoint after a run was deleted: %d\n%s%s", failed.code, failed.stdout, failed.stderr)
	}
}

// partialProofs: a proof with events left out, its end left out or an
// entry twice makes verify-proof exit 1 naming it; --unended accepts a
// proof without the run's end, and says so.
func partialProofs(t *testing.T, in runOpts, whole string) {
	t.Helper()
	data, err := os.ReadFile(whole)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind string
		edit func(p *tlog.Proof)
	}{
		{tlog.FindLeftOut, func(p *tlog.Proof) { p.Entries = append(p.Entries[:3], p.Entries[5:]...) }},
		{tlog.FindNoEnd, func(p *tlog.Proof) { p.Entries = p.Entries[:len(p.Entries)-1] }},
		{tlog.FindDuplicate, func(p *tlog.Proof) { p.Entries = append(p.Entries, p.Entries[2]) }},
	} {
		var p tlog.Proof
		if err := json.Unmarshal(data, &p); err != nil {
			t.Fatal(err)
		}
		tc.edit(&p)
		out, _ := json.Marshal(p)
		file := filepath.Join(in.dir, tc.kind+".json")
		if err := os.WriteFile(file, out, 0o644); err != nil {
			t.Fatal(err)
		}
		r := runWith(t, in, "observer", "verify-proof", file, "--key", "log.key.pub")
		if r.code != 1 || !strings.Contains(r.stderr, "not of the whole run") || !strings.Contains(r.stderr, tc.kind) || !strings.Contains(r.stdout, "FAILED  run") {
			t.Errorf("verify-proof of a proof with %s: %d\n%s%s", tc.kind, r.code, r.stdout, r.stderr)
		}
		if tc.kind == tlog.FindNoEnd {
			r := runWith(t, in, "observer", "verify-proof", file, "--key", "log.key.pub", "--unended")
			if r.code != 0 || !strings.Contains(r.stdout, "note: no_end") {
				t.Errorf("verify-proof --unended: %d\n%s%s", r.code, r.stdout, r.stderr)
			}
		}
	}
}

// runIDOf reads the run id of one line of observer runs --json.
func runIDOf(t *testing.T, line string) string {
	t.Helper()
	const key = `"run_id":"`
	i := strings.Index(line, key)
	if i < 0 {
		t.Fatalf("no run id in %q", line)
	}
	rest := line[i+len(key):]
	return rest[:strings.IndexByte(rest, '"')]
}

// deleteRun deletes every event of run from a stopped server's store, as
// whoever holds the store could.
func deleteRun(t *testing.T, store, run string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := embedded.OpenStore(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	b, err := bus.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	if _, err := b.Replay(ctx, bus.Filter{Run: run}, func(e *events.Event) error { seqs = append(seqs, e.Stored); return nil }); err != nil {
		t.Fatal(err)
	}
	s, err := b.JetStream().Stream(ctx, b.Names().Events)
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range seqs {
		if err := s.DeleteMsg(ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
}

// observer prove of a run stored after the latest checkpoint says so, and
// when the next checkpoint comes.
func TestProveARunNewerThanTheCheckpoint(t *testing.T) {
	dir := t.TempDir()
	in := runOpts{dir: dir}
	if r := runWith(t, in, "loop", "run", "--embedded", "--listen", "none", "What time is it?"); r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	store := filepath.Join(dir, ".hookbus")
	if key := runWith(t, in, "observer", "keygen", "--name", "example.com/hookbus", "--out", "log.key"); key.code != 0 {
		t.Fatalf("keygen: %d %s", key.code, key.stderr)
	}
	if cp := runWith(t, in, "observer", "checkpointer", "--store", store, "--key", "log.key", "--once"); cp.code != 0 {
		t.Fatalf("checkpointer: %d\n%s", cp.code, cp.stderr)
	}
	if r := runWith(t, in, "loop", "run", "--embedded", "--listen", "none", "--session", "later", "What time is it?"); r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	runs := strings.Split(strings.TrimSpace(runWith(t, in, "observer", "runs", "--store", store, "--session", "later", "--json").stdout), "\n")
	newer := runIDOf(t, runs[0])
	r := runWith(t, in, "observer", "prove", "--store", store, "--key", "log.key.pub", newer)
	if r.code != 1 || !strings.Contains(r.stderr, "is newer than the checkpoint") || !strings.Contains(r.stderr, "--interval (10s by default") {
		t.Fatalf("prove of a run newer than the checkpoint: %d\n%s", r.code, r.stderr)
	}
}
