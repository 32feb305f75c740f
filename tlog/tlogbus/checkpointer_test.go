package tlogbus_test

import (
	"encoding/json"
	"testing"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/tlog"
	"github.com/hookbus/hookbus/tlog/tlogbus"
)

// A checkpointer following the stream stores a chain of checkpoints, each
// extending the one before; the stream as read proves every one of them,
// and a run's events are proven offline.
func TestCheckpointsProveTheStream(t *testing.T) {
	b := bustest.StartBus(t)
	kp := signingKey(t)
	ids := runs(t, b, kp, "s1", 3)
	key := newLogKey(t, logName)
	checkpointAll(t, b, tlogbus.CheckpointerConfig{Signer: key.signer, Verifier: key.verifier, Every: 7})

	recs, err := tlogbus.ReadRecords(testCtx(t), b)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := b.EventsState(testCtx(t))
	if want := int(st.LastSeq+6) / 7; len(recs) < want {
		t.Fatalf("%d checkpoints for %d messages every 7, want at least %d", len(recs), st.LastSeq, want)
	}
	var prev uint64
	for _, r := range recs {
		s, err := tlog.ParseRecord(r.Data, key.verifier)
		if err != nil {
			t.Fatal(err)
		}
		if s.Record.PrevSize != prev {
			t.Fatalf("checkpoint of size %d extends %d, not the previous %d", s.Size, s.Record.PrevSize, prev)
		}
		prev = s.Size
	}
	if prev != st.LastSeq {
		t.Fatalf("the last checkpoint covers %d of %d messages", prev, st.LastSeq)
	}

	v := verifyStream(t, b, key, tlogbus.VerifyConfig{})
	if !v.Intact || !v.Proven || v.ProvenStored != len(recs) || v.Compared != int(st.LastSeq) || len(v.Findings) != 0 {
		t.Fatalf("verdict:\n%s", explain(v))
	}

	p, later, err := tlogbus.Prove(testCtx(t), b, ids[1], tlogbus.VerifyConfig{LogKey: key.verifier})
	if err != nil || later != 0 {
		t.Fatalf("prove: %v (%d later)", err, later)
	}
	data, _ := json.Marshal(p)
	res, err := tlog.VerifyProof(data, key.verifier)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	if !res.Ended || res.Signer != pub || !res.Linked || len(res.Events) != len(seqsOf(t, b, ids[1])) {
		t.Fatalf("proof result: ended %v signer %q linked %v, %d events", res.Ended, res.Signer, res.Linked, len(res.Events))
	}
}
