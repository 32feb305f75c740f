package tlogbus_test

import (
	"strings"
	"testing"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/tlog"
	"github.com/hookbus/hookbus/tlog/tlogbus"
	"golang.org/x/mod/sumdb/note"
)

// The oldest messages gone read as expired only where the stream's limits
// could have removed them: a count limit far above what the stream ever
// held, or a size limit far above its size, does not make a deletion of
// its oldest runs retention. The verification requires the witness, and
// fails all the same.
func TestHeadDeletedUnderLooseLimits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit func(msgs, bytes uint64) (maxMsgs, maxBytes int64)
	}{
		{"MaxMsgs", func(uint64, uint64) (int64, int64) { return 1_000_000, 0 }},
		{"MaxMsgsJustAbove", func(msgs, _ uint64) (int64, int64) { return int64(msgs) + 1, 0 }},
		{"MaxBytes", func(uint64, uint64) (int64, int64) { return 0, 1 << 30 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, nc := bustest.Start(t)
			b := bustest.Provision(t, nc)
			kp := signingKey(t)
			ids := runs(t, b, kp, "s1", 3)
			key := newLogKey(t, logName)
			_, wv := witness(t, srv, b, t.TempDir(), key)
			checkpointAll(t, b, tlogbus.CheckpointerConfig{Signer: key.signer, Verifier: key.verifier, Every: 10,
				Witnesses: []tlogbus.WitnessRef{{Name: "w1", Key: wv}}})
			witnessed := tlogbus.VerifyConfig{Witnesses: []note.Verifier{wv}}
			if v := verifyStream(t, b, key, witnessed); !v.Intact || !v.Proven {
				t.Fatalf("before:\n%s", explain(v))
			}
			st, err := b.EventsState(testCtx(t))
			if err != nil {
				t.Fatal(err)
			}
			s, err := b.JetStream().Stream(testCtx(t), b.Names().Events)
			if err != nil {
				t.Fatal(err)
			}
			cfg := s.CachedInfo().Config
			cfg.MaxMsgs, cfg.MaxBytes = tc.limit(st.Msgs, st.Bytes)
			if _, err := b.JetStream().UpdateStream(testCtx(t), cfg); err != nil {
				t.Fatal(err)
			}
			if after, _ := b.EventsState(testCtx(t)); after.FirstSeq != 1 {
				t.Fatalf("the limit removed messages itself: %+v", after)
			}
			gone := seqsOf(t, b, ids[0])
			deleteSeqs(t, b, gone)
			v := verifyStream(t, b, key, witnessed)
			f := only(t, v, tlog.FindRemoved, gone[0], gone[len(gone)-1])
			if v.Has(tlog.FindExpired) {
				t.Fatalf("a deletion read as expiry:\n%s", explain(v))
			}
			_ = f
		})
	}
}

// What the limits remove is still retention: a size limit that the stream
// went over expires its oldest messages, and the rest is proven.
func TestRetentionBySize(t *testing.T) {
	b := bustest.StartBus(t)
	kp := signingKey(t)
	runs(t, b, kp, "s1", 3)
	key := newLogKey(t, logName)
	checkpointAll(t, b, tlogbus.CheckpointerConfig{Signer: key.signer, Verifier: key.verifier, Every: 10})
	st, err := b.EventsState(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	s, err := b.JetStream().Stream(testCtx(t), b.Names().Events)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.MaxBytes, cfg.MaxMsgSize = int64(st.Bytes*2/3), 4096
	if _, err := b.JetStream().UpdateStream(testCtx(t), cfg); err != nil {
		t.Fatal(err)
	}
	after, err := b.EventsState(testCtx(t))
	if err != nil || after.FirstSeq == 1 {
		t.Fatalf("the size limit removed nothing: %+v %v", after, err)
	}
	v := verifyStream(t, b, key, tlogbus.VerifyConfig{})
	if !v.Intact || !v.Proven || !v.Has(tlog.FindExpired) {
		t.Fatalf("after the size limit:\n%s", explain(v))
	}
	// The oldest messages the limit keeps, deleted, are not expiry (the
	// message nearest those kept is named: how large the others were is
	// not known).
	var deleted []uint64
	for seq := after.FirstSeq; seq < after.FirstSeq+10; seq++ {
		deleted = append(deleted, seq)
	}
	deleteSeqs(t, b, deleted)
	v = verifyStream(t, b, key, tlogbus.VerifyConfig{})
	last := deleted[len(deleted)-1]
	f := only(t, v, tlog.FindRemoved, last, last)
	if !strings.Contains(f.Detail, "retention limits") {
		t.Fatalf("the finding: %s", f.Detail)
	}
}
