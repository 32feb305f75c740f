package tlogbus_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/tlog"
	"github.com/hookbus/hookbus/tlog/tlogbus"
	"github.com/nats-io/nats.go"
)

// runOnce runs a checkpointer until it stops by itself (an error) or,
// having caught up, is stopped.
func runOnce(t *testing.T, b *bus.Bus, cfg tlogbus.CheckpointerConfig) error {
	t.Helper()
	if cfg.Interval == 0 {
		cfg.Interval = 50 * time.Millisecond
	}
	c, err := tlogbus.NewCheckpointer(b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	st, err := b.EventsState(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(time.Minute)
	for {
		select {
		case err := <-done:
			return err
		case <-deadline:
			t.Fatal("the checkpointer did not catch up")
		case <-time.After(10 * time.Millisecond):
		}
		if c.Status().Size >= st.LastSeq {
			cancel()
			return <-done
		}
	}
}

// replaceStreams deletes the events and checkpoints streams, provisions
// them again and returns a bus on them: what the server's admin can do.
func replaceStreams(t *testing.T, nc *nats.Conn, b *bus.Bus) *bus.Bus {
	t.Helper()
	for _, s := range []string{b.Names().Events, b.Names().Checkpoints} {
		if err := b.JetStream().DeleteStream(testCtx(t), s); err != nil {
			t.Fatal(err)
		}
	}
	return bustest.Provision(t, nc)
}

// The checkpointer keeps its last checkpoint in a file of its own: a log
// replaced on the server (both streams deleted and made again, the
// checkpoints stream rolled back) is not signed over as if it were the
// same; a new log starts only by the operator's decision, which its first
// checkpoint records and verification notes, and the saved checkpoint
// still shows the stream is not the log it was.
func TestCheckpointerKeepsItsLog(t *testing.T) {
	key := newLogKey(t, logName)
	state := filepath.Join(t.TempDir(), "state", "log.checkpoint")
	cfg := tlogbus.CheckpointerConfig{Signer: key.signer, Verifier: key.verifier, Every: 10, State: state}

	t.Run("StreamsReplaced", func(t *testing.T) {
		_, nc := bustest.Start(t)
		b := bustest.Provision(t, nc)
		kp := signingKey(t)
		runs(t, b, kp, "s1", 2)
		if err := runOnce(t, b, cfg); err != nil {
			t.Fatal(err)
		}
		saved, err := os.ReadFile(state)
		if err != nil {
			t.Fatal(err)
		}
		old, err := tlog.OpenCheckpoint(saved, key.verifier)
		if err != nil || old.Size == 0 {
			t.Fatalf("the saved checkpoint: %v %+v", err, old)
		}
		// A restart over the same log goes on.
		runs(t, b, kp, "s1", 1)
		if err := runOnce(t, b, cfg); err != nil {
			t.Fatalf("a restart: %v", err)
		}
		saved, _ = os.ReadFile(state)

		b = replaceStreams(t, nc, b)
		runs(t, b, kp, "s2", 1)
		err = runOnce(t, b, cfg)
		if !errors.Is(err, tlogbus.ErrNewLog) || !strings.Contains(err.Error(), "--new-log") {
			t.Fatalf("over replaced streams: %v", err)
		}
		if recs, _ := tlogbus.ReadRecords(testCtx(t), b); len(recs) != 0 {
			t.Fatalf("%d checkpoints stored", len(recs))
		}
		if again, _ := os.ReadFile(state); string(again) != string(saved) {
			t.Fatal("the saved checkpoint changed")
		}

		// The operator's decision starts a new log and is recorded.
		withReason := cfg
		withReason.NewLog = "store lost in the disk failure of ticket 42"
		if err := runOnce(t, b, withReason); err != nil {
			t.Fatal(err)
		}
		recs, err := tlogbus.ReadRecords(testCtx(t), b)
		if err != nil || len(recs) == 0 {
			t.Fatalf("records: %d %v", len(recs), err)
		}
		first, err := tlog.ParseRecord(recs[0].Data, key.verifier)
		if err != nil {
			t.Fatal(err)
		}
		if d := first.Record.NewLog; d == nil || d.Reason != withReason.NewLog || d.Previous != string(saved) {
			t.Fatalf("the first record's decision: %+v", first.Record.NewLog)
		}
		v := verifyStream(t, b, key, tlogbus.VerifyConfig{})
		if !v.Intact || !v.Has(tlog.FindNewLog) {
			t.Fatalf("the new log:\n%s", explain(v))
		}
		// Against the checkpoint kept of the old log, it fails.
		v = verifyStream(t, b, key, tlogbus.VerifyConfig{Checkpoint: saved})
		if v.Intact || v.OK() {
			t.Fatalf("against the old log's checkpoint:\n%s", explain(v))
		}
		// The next restart goes on with the new log, no decision needed.
		runs(t, b, kp, "s2", 1)
		if err := runOnce(t, b, cfg); err != nil {
			t.Fatalf("a restart of the new log: %v", err)
		}
	})

	t.Run("CheckpointsRolledBack", func(t *testing.T) {
		_, nc := bustest.Start(t)
		b := bustest.Provision(t, nc)
		own := cfg
		own.State = filepath.Join(t.TempDir(), "log.checkpoint")
		runs(t, b, signingKey(t), "s1", 2)
		if err := runOnce(t, b, own); err != nil {
			t.Fatal(err)
		}
		recs := rawMessages(t, b.JetStream(), b.Names().Checkpoints)
		if err := b.JetStream().DeleteStream(testCtx(t), b.Names().Checkpoints); err != nil {
			t.Fatal(err)
		}
		b = bustest.Provision(t, nc)
		copyInto(t, b, recs[:len(recs)-2], nil)
		err := runOnce(t, b, own)
		if !errors.Is(err, tlogbus.ErrNewLog) || !strings.Contains(err.Error(), "rolled back") {
			t.Fatalf("over a rolled back log: %v", err)
		}
		// Nor does the decision start a new log over a stream that holds one.
		own.NewLog = "whatever"
		if err := runOnce(t, b, own); !errors.Is(err, tlogbus.ErrNewLog) {
			t.Fatalf("a new log over a stored one: %v", err)
		}
	})

	t.Run("SavedBehindTheStored", func(t *testing.T) {
		// A checkpointer that stored a checkpoint and stopped before it
		// saved it goes on: the stored one extends the saved one.
		_, nc := bustest.Start(t)
		b := bustest.Provision(t, nc)
		own := cfg
		own.State = filepath.Join(t.TempDir(), "log.checkpoint")
		runs(t, b, signingKey(t), "s1", 2)
		if err := runOnce(t, b, own); err != nil {
			t.Fatal(err)
		}
		recs, err := tlogbus.ReadRecords(testCtx(t), b)
		if err != nil || len(recs) < 3 {
			t.Fatalf("records: %d %v", len(recs), err)
		}
		early, err := tlog.ParseRecord(recs[1].Data, key.verifier)
		if err != nil {
			t.Fatal(err)
		}
		if err := tlog.SaveCheckpoint(own.State, early.Note); err != nil {
			t.Fatal(err)
		}
		if err := runOnce(t, b, own); err != nil {
			t.Fatalf("behind the stored log: %v", err)
		}
		latest, _ := tlogbus.LastRecord(testCtx(t), b)
		s, _ := tlog.ParseRecord(latest.Data, key.verifier)
		if saved, err := tlog.ReadSavedCheckpoint(own.State, key.verifier); err != nil || saved.Size != s.Size {
			t.Fatalf("the state after: %+v %v", saved, err)
		}
	})
}
