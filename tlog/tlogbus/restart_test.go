package tlogbus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/tlog"
	"github.com/hookbus/hookbus/tlog/tlogbus"
	"github.com/nats-io/nats.go/jetstream"
)

// A checkpointer that dies with messages read and not checkpointed (its
// connection gone, no last checkpoint stored) loses nothing: the next one
// goes on from the last checkpoint stored, reads the messages its
// consumer had delivered and not acknowledged, and the checkpoints form one
// chain covering every message.
func TestCheckpointerRestartLosesNothing(t *testing.T) {
	srv, nc := bustest.Start(t)
	b := bustest.Provision(t, nc)
	kp := signingKey(t)
	runs(t, b, kp, "s1", 3)
	key := newLogKey(t, logName)
	// Every 5 with a long interval: the messages past the last multiple
	// of 5 wait, read and unacknowledged, when the connection dies.
	cfg := tlogbus.CheckpointerConfig{Signer: key.signer, Verifier: key.verifier, Every: 5, Interval: time.Hour}
	nc1 := bustest.Conn(t, srv)
	b1, err := bus.New(nc1)
	if err != nil {
		t.Fatal(err)
	}
	first := startCheckpointer(t, b1, cfg)
	st, _ := b.EventsState(testCtx(t))
	if st.LastSeq%5 == 0 {
		t.Fatalf("the test needs a partial window: %d messages", st.LastSeq)
	}
	bustest.Eventuallyf(t, time.Minute, func() bool { return first.c.Status().Read == st.LastSeq },
		"the first checkpointer did not read the stream: %+v", first.c.Status())
	stored := first.c.Status().Size
	if stored != st.LastSeq/5*5 {
		t.Fatalf("checkpointed %d of %d", stored, st.LastSeq)
	}
	nc1.Close() // dies: nothing more is stored or acknowledged
	if err := first.halt(t); err == nil {
		t.Fatal("the checkpointer with its connection closed returned no error")
	}
	cons, err := b.JetStream().Consumer(testCtx(t), b.Names().Events, tlogbus.DefaultDurable)
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if info.AckFloor.Stream != stored || info.Delivered.Stream != st.LastSeq {
		t.Fatalf("the consumer acknowledged %d and delivered %d, want %d and %d", info.AckFloor.Stream, info.Delivered.Stream, stored, st.LastSeq)
	}

	runs(t, b, kp, "s1", 2)
	second := startCheckpointer(t, b, cfg)
	last, _ := b.EventsState(testCtx(t))
	bustest.Eventuallyf(t, time.Minute, func() bool { return second.c.Status().Read == last.LastSeq },
		"the second checkpointer did not read the stream: %+v", second.c.Status())
	if err := second.halt(t); err != nil { // stores the partial window
		t.Fatal(err)
	}

	recs, err := tlogbus.ReadRecords(testCtx(t), b)
	if err != nil {
		t.Fatal(err)
	}
	var prev uint64
	for _, r := range recs {
		s, err := tlog.ParseRecord(r.Data, key.verifier)
		if err != nil {
			t.Fatal(err)
		}
		if s.Record.PrevSize != prev || len(s.Record.Gaps) > 0 {
			t.Fatalf("checkpoint of size %d extends %d (previous %d), gaps %v", s.Size, s.Record.PrevSize, prev, s.Record.Gaps)
		}
		prev = s.Size
	}
	if prev != last.LastSeq {
		t.Fatalf("the checkpoints cover %d of %d messages", prev, last.LastSeq)
	}
	v := verifyStream(t, b, key, tlogbus.VerifyConfig{})
	if !v.Intact || !v.Proven || v.Compared != int(last.LastSeq) {
		t.Fatalf("verify:\n%s", explain(v))
	}

	// A checkpointer of another log on the same stream and checkpoints is
	// refused: the last checkpoint is not its own.
	other := newLogKey(t, "other.example/hookbus")
	c, _ := tlogbus.NewCheckpointer(b, tlogbus.CheckpointerConfig{Signer: other.signer, Verifier: other.verifier, Durable: "other"})
	if err := c.Run(testCtx(t)); err == nil {
		t.Fatal("a checkpointer of another log ran on this log's checkpoints")
	}
}

// A checkpointer refuses to go on over a stream that no longer holds what
// its last checkpoint covers.
func TestCheckpointerRefusesADivergedStream(t *testing.T) {
	c := newCheckpointed(t)
	seqs := seqsOf(t, c.b, c.runs[2])
	deleteSeqs(t, c.b, seqs[len(seqs)-1:]) // the last message checkpointed
	cp, _ := tlogbus.NewCheckpointer(c.b, tlogbus.CheckpointerConfig{Signer: c.key.signer, Verifier: c.key.verifier})
	ctx, cancel := context.WithTimeout(testCtx(t), 30*time.Second)
	defer cancel()
	if err := cp.Run(ctx); !errors.Is(err, tlogbus.ErrDiverged) {
		t.Fatalf("over a stream whose last checkpointed message is gone: %v", err)
	}
}

// Retention is not tampering: once JetStream expires the oldest events
// (max age), the stored checkpoints stand for them, and verification
// proves the rest; a window of which some messages expired (a message
// count limit) is proven whole from its stored leaves.
func TestRetentionKeepsProving(t *testing.T) {
	t.Run("MaxAge", func(t *testing.T) {
		b := bustest.StartBus(t, bus.WithEventsMaxAge(time.Second), bus.WithDuplicateWindow(time.Second))
		kp := signingKey(t)
		key := newLogKey(t, logName)
		cfg := tlogbus.CheckpointerConfig{Signer: key.signer, Verifier: key.verifier, Every: 10}
		runs(t, b, kp, "old", 2)
		checkpointAll(t, b, cfg)
		expired, _ := b.EventsState(testCtx(t))
		bustest.Eventuallyf(t, 30*time.Second, func() bool {
			st, err := b.EventsState(context.Background())
			return err == nil && st.Msgs == 0
		}, "the events did not expire")
		runs(t, b, kp, "new", 2)
		checkpointAll(t, b, cfg)
		st, _ := b.EventsState(testCtx(t))
		v := verifyStream(t, b, key, tlogbus.VerifyConfig{})
		if !v.Intact || !v.Proven || v.Begin != expired.LastSeq || v.Compared != int(st.LastSeq-expired.LastSeq) {
			t.Fatalf("after expiry:\n%s", explain(v))
		}
		if len(v.Findings) != 1 || v.Findings[0].Kind != tlog.FindExpired || v.Findings[0].First != 1 || v.Findings[0].Last != expired.LastSeq || v.Findings[0].Fails {
			t.Fatalf("want one note of the expired messages:\n%s", explain(v))
		}
	})
	t.Run("BeforeTheFirstCheckpoint", func(t *testing.T) {
		// Messages gone before any checkpointer read them are gaps of the
		// tree: the checkpoints record them so, and nothing is missing.
		b := bustest.StartBus(t)
		kp := signingKey(t)
		key := newLogKey(t, logName)
		runs(t, b, kp, "s1", 2)
		s, err := b.JetStream().Stream(testCtx(t), b.Names().Events)
		if err != nil {
			t.Fatal(err)
		}
		cfg := s.CachedInfo().Config
		cfg.MaxMsgs = 20
		if _, err := b.JetStream().UpdateStream(testCtx(t), cfg); err != nil {
			t.Fatal(err)
		}
		checkpointAll(t, b, tlogbus.CheckpointerConfig{Signer: key.signer, Verifier: key.verifier, Every: 8})
		recs, err := tlogbus.ReadRecords(testCtx(t), b)
		if err != nil {
			t.Fatal(err)
		}
		first, err := tlog.ParseRecord(recs[0].Data, key.verifier)
		if err != nil {
			t.Fatal(err)
		}
		if len(first.Record.Gaps) != 1 || first.Record.Gaps[0] != [2]uint64{1, 12} {
			t.Fatalf("the first checkpoint's gaps: %v", first.Record.Gaps)
		}
		v := verifyStream(t, b, key, tlogbus.VerifyConfig{})
		if !v.Intact || !v.Proven || v.Compared != 20 || len(v.Findings) != 0 {
			t.Fatalf("verify:\n%s", explain(v))
		}
	})
	t.Run("MaxMsgsWithinAWindow", func(t *testing.T) {
		b := bustest.StartBus(t)
		kp := signingKey(t)
		key := newLogKey(t, logName)
		runs(t, b, kp, "s1", 3)
		checkpointAll(t, b, tlogbus.CheckpointerConfig{Signer: key.signer, Verifier: key.verifier, Every: 20})
		// The operator bounds the stream to 30 messages: the oldest go,
		// the first window only in part.
		s, err := b.JetStream().Stream(testCtx(t), b.Names().Events)
		if err != nil {
			t.Fatal(err)
		}
		cfg := s.CachedInfo().Config
		cfg.MaxMsgs = 30
		if _, err := b.JetStream().UpdateStream(testCtx(t), cfg); err != nil {
			t.Fatal(err)
		}
		st, _ := b.EventsState(testCtx(t))
		if st.FirstSeq%20 == 1 {
			t.Fatalf("the test needs the limit inside a window: first seq %d", st.FirstSeq)
		}
		v := verifyStream(t, b, key, tlogbus.VerifyConfig{})
		if !v.Intact || !v.Proven || v.Begin != st.FirstSeq-1 || v.Compared != 30 || !v.Has(tlog.FindExpired) {
			t.Fatalf("after trimming:\n%s", explain(v))
		}
		// Removing a message the limit keeps is still tampering.
		if err := s.DeleteMsg(testCtx(t), st.FirstSeq+2); err != nil {
			t.Fatal(err)
		}
		v = verifyStream(t, b, key, tlogbus.VerifyConfig{})
		only(t, v, tlog.FindRemoved, st.FirstSeq+2, st.FirstSeq+2)
		_ = jetstream.ErrMsgNotFound
	})
}
