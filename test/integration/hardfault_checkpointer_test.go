package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hookbus/hookbus/tlog"
	"github.com/hookbus/hookbus/tlog/tlogbus"
	"github.com/nats-io/nats.go/jetstream"
)

// TestFaultCheckpointerKilled: observer checkpointer, a process following
// the events of runs a worker is running, is SIGKILLed three times, each
// with messages delivered to it and not checkpointed (its consumer's
// deliveries unacknowledged), and started again each time. When the runs have ended
// and it has caught up, its checkpoints form one chain, each extending the
// one before with no gap it did not see, and the stream verifies against
// them: nothing was lost.
func TestFaultCheckpointerKilled(t *testing.T) {
	hardFaults(t)
	ctx := testCtx(t, 10*time.Minute)
	srv := startNATS(t)
	admin := adminBus(t, ctx, srv.url(), 1)
	dir := t.TempDir()
	key := filepath.Join(dir, "log.key")
	if r := runWith(t, runOpts{dir: dir}, "observer", "keygen", "--name", "faults.example/hookbus", "--out", key); r.code != 0 {
		t.Fatalf("keygen: %d %s", r.code, r.stderr)
	}
	_, verifier, err := tlog.ReadSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	args := loadWorkerArgs(srv.url(), loadScriptFile(t, loadDelayMS), t.TempDir(), "--agent", "load")
	ws := []*worker{startWorker(t, args...)}
	checkpointer := func() *faultProc {
		return startFaultProc(t, "observer", "checkpointer", "--nats", srv.url(), "--key", key, "--state", filepath.Join(dir, "log.checkpoint"), "--every", "25", "--interval", "300ms")
	}
	var lastErr error
	lastSize := func() uint64 {
		r, err := tlogbus.LastRecord(ctx, admin)
		lastErr = err
		if err != nil || r == nil {
			return 0
		}
		s, err := tlog.ParseRecord(r.Data, verifier)
		if err != nil {
			t.Fatalf("the last checkpoint: %v", err)
		}
		return s.Size
	}

	cp := checkpointer()
	submitRuns(t, ctx, admin, "load", "s", loadPrompt, loadRuns)
	var cons jetstream.Consumer
	waitEvery(t, time.Minute, 10*time.Millisecond, func() bool {
		cons, err = admin.JetStream().Consumer(ctx, admin.Names().Events, tlogbus.DefaultDurable)
		return err == nil
	}, "the checkpointer's durable consumer: %v", lazy(func() string { return fmt.Sprint(err) }))
	kills := 0
	for range 3 {
		before := lastSize()
		waitEvery(t, 2*time.Minute, 50*time.Millisecond, func() bool { return lastSize() > before }, "a new checkpoint after size %d (the last read: %v):\n%s\nworker:\n%s", before, lazy(func() string { return fmt.Sprint(lastErr) }), lazy(cp.stderr.String), lazy(ws[0].stderr.String))
		// The kill comes with messages delivered to it and not yet
		// acknowledged: read, not checkpointed.
		waitEvery(t, 2*time.Minute, 5*time.Millisecond, func() bool {
			info, err := cons.Info(ctx)
			return err == nil && info.Delivered.Stream > info.AckFloor.Stream
		}, "messages delivered to the checkpointer beyond its last checkpoint")
		_ = cp.cmd.Process.Signal(syscall.SIGKILL)
		<-cp.done
		kills++
		cp = checkpointer()
	}
	waitEnded(t, ctx, admin, "load", loadRuns, 5*time.Minute, ws...)
	st, err := admin.EventsState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitEvery(t, 2*time.Minute, 50*time.Millisecond, func() bool { return lastSize() >= st.LastSeq }, "the checkpoints to cover %d messages:\n%s", st.LastSeq, lazy(cp.stderr.String))

	recs, err := tlogbus.ReadRecords(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	var prev uint64
	for _, r := range recs {
		s, err := tlog.ParseRecord(r.Data, verifier)
		if err != nil {
			t.Fatal(err)
		}
		if s.Record.PrevSize != prev || len(s.Record.Gaps) > 0 {
			t.Fatalf("checkpoint of size %d extends %d (the previous is %d), gaps %v", s.Size, s.Record.PrevSize, prev, s.Record.Gaps)
		}
		prev = s.Size
	}
	vctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	v, err := tlogbus.VerifyStream(vctx, admin, tlogbus.VerifyConfig{LogKey: verifier})
	if err != nil {
		t.Fatal(err)
	}
	if !v.Intact || !v.Proven || v.Compared != int(st.LastSeq) {
		t.Fatalf("verify: %+v", v)
	}
	t.Logf("checkpointer SIGKILLed %d times during %d runs: %d checkpoints cover the %d messages in one chain, every one proven", kills, loadRuns, len(recs), st.LastSeq)
}
