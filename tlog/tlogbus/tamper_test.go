package tlogbus_test

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/tlog"
	"github.com/hookbus/hookbus/tlog/tlogbus"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// checkpointed is a store of three signed runs, every message checkpointed.
type checkpointed struct {
	b    *bus.Bus
	kp   nkeys.KeyPair
	key  logKey
	runs []string
}

func newCheckpointed(t *testing.T) checkpointed {
	t.Helper()
	b := bustest.StartBus(t)
	kp := signingKey(t)
	ids := runs(t, b, kp, "s1", 3)
	key := newLogKey(t, logName)
	checkpointAll(t, b, tlogbus.CheckpointerConfig{Signer: key.signer, Verifier: key.verifier, Every: 10})
	if v := verifyStream(t, b, key, tlogbus.VerifyConfig{}); !v.Intact || !v.Proven {
		t.Fatalf("before tampering:\n%s", explain(v))
	}
	return checkpointed{b: b, kp: kp, key: key, runs: ids}
}

// copyStore returns a fresh bus holding the checkpoints of c and the
// events of msgs, changed by edit.
func (c checkpointed) copyStore(t *testing.T, msgs []stored, edit func(stored) *nats.Msg) *bus.Bus {
	t.Helper()
	cp := bustest.StartBus(t)
	copyInto(t, cp, msgs, edit)
	copyInto(t, cp, rawMessages(t, c.b.JetStream(), c.b.Names().Checkpoints), nil)
	return cp
}

func (c checkpointed) events(t *testing.T) []stored {
	return rawMessages(t, c.b.JetStream(), c.b.Names().Events)
}

func deleteSeqs(t *testing.T, b *bus.Bus, seqs []uint64) {
	t.Helper()
	s, err := b.JetStream().Stream(testCtx(t), b.Names().Events)
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range seqs {
		if err := s.DeleteMsg(testCtx(t), seq); err != nil {
			t.Fatal(err)
		}
	}
}

// only returns the verdict's single failing finding, failing the test when
// there is not exactly one, or it is not of kind on first-last.
func only(t *testing.T, v *tlog.StreamVerdict, kind string, first, last uint64) tlog.Finding {
	t.Helper()
	var failing []tlog.Finding
	for _, f := range v.Findings {
		if f.Fails {
			failing = append(failing, f)
		}
	}
	if v.Intact || v.OK() || len(failing) != 1 || failing[0].Kind != kind || failing[0].First != first || failing[0].Last != last {
		t.Fatalf("want one %s finding on seqs %d-%d, got:\n%s", kind, first, last, explain(v))
	}
	return failing[0]
}

// Each tampering the per-run chain cannot see, or that the operator hides
// by signing the rewritten chain with its own key, is found by verifying
// the stream against the checkpoints, and named.
func TestCheckpointsNameTampering(t *testing.T) {
	t.Run("WholeRunDeleted", func(t *testing.T) {
		c := newCheckpointed(t)
		gone := seqsOf(t, c.b, c.runs[1])
		deleteSeqs(t, c.b, gone)
		for _, rv := range verifyRuns(t, c.b, c.kp) {
			if !rv.OK() || rv.RunID == c.runs[1] {
				t.Fatalf("the per-run chains: %+v", rv)
			}
		}
		v := verifyStream(t, c.b, c.key, tlogbus.VerifyConfig{})
		f := only(t, v, tlog.FindRemoved, gone[0], gone[len(gone)-1])
		if !strings.Contains(f.Detail, c.runs[1]) {
			t.Fatalf("the finding does not name the run: %s", f.Detail)
		}
	})
	t.Run("TailTruncated", func(t *testing.T) {
		c := newCheckpointed(t)
		seqs := seqsOf(t, c.b, c.runs[2])
		tail := seqs[len(seqs)/2:]
		deleteSeqs(t, c.b, tail)
		// The per-run chain reads the run as cut off: not a failure.
		for _, rv := range verifyRuns(t, c.b, c.kp) {
			if rv.RunID == c.runs[2] && (rv.Ended || rv.Has("removed")) {
				t.Fatalf("the last run: %+v", rv)
			}
		}
		v := verifyStream(t, c.b, c.key, tlogbus.VerifyConfig{})
		only(t, v, tlog.FindTruncated, tail[0], tail[len(tail)-1])
	})
	t.Run("TailCutFromACopy", func(t *testing.T) {
		c := newCheckpointed(t)
		all := c.events(t)
		cut := all[len(all)-5:]
		cp := c.copyStore(t, all[:len(all)-5], nil)
		v := verifyStream(t, cp, c.key, tlogbus.VerifyConfig{})
		f := only(t, v, tlog.FindTruncated, cut[0].seq, cut[len(cut)-1].seq)
		if !strings.Contains(f.Detail, c.runs[2]) {
			t.Fatalf("the finding does not name the run: %s", f.Detail)
		}
	})
	t.Run("LatestCheckpointsDropped", func(t *testing.T) {
		// The events intact, the checkpoints stream without its latest
		// record: a checkpoint an auditor (or a witness) kept says so.
		c := newCheckpointed(t)
		kept, err := tlogbus.LastRecord(testCtx(t), c.b)
		if err != nil {
			t.Fatal(err)
		}
		s, err := tlog.ParseRecord(kept.Data, c.key.verifier)
		if err != nil {
			t.Fatal(err)
		}
		cp := bustest.StartBus(t)
		copyInto(t, cp, c.events(t), nil)
		recs := rawMessages(t, c.b.JetStream(), c.b.Names().Checkpoints)
		copyInto(t, cp, recs[:len(recs)-1], nil)
		v := verifyStream(t, cp, c.key, tlogbus.VerifyConfig{Checkpoint: s.Note})
		only(t, v, tlog.FindMissingCheckpoint, s.Record.PrevSize+1, s.Size)
		if !v.Proven {
			t.Fatalf("the stream itself is intact:\n%s", explain(v))
		}
	})
	t.Run("OldestRemovedWithoutRetention", func(t *testing.T) {
		c := newCheckpointed(t)
		deleteSeqs(t, c.b, []uint64{1, 2, 3})
		v := verifyStream(t, c.b, c.key, tlogbus.VerifyConfig{})
		only(t, v, tlog.FindRemoved, 1, 3)
	})
	t.Run("RunDroppedFromACopy", func(t *testing.T) {
		c := newCheckpointed(t)
		gone := seqsOf(t, c.b, c.runs[1])
		cp := c.copyStore(t, c.events(t), func(m stored) *nats.Msg {
			if slices.Contains(gone, m.seq) {
				return nil
			}
			return m.msg
		})
		v := verifyStream(t, cp, c.key, tlogbus.VerifyConfig{})
		f := only(t, v, tlog.FindRemoved, gone[0], gone[len(gone)-1])
		if !strings.Contains(f.Detail, c.runs[1]) || !strings.Contains(f.Detail, "renumbered") {
			t.Fatalf("the finding: %s", f.Detail)
		}
	})
	t.Run("EventAlteredAndRunResigned", func(t *testing.T) {
		c := newCheckpointed(t)
		run := c.runs[0]
		var altered uint64
		chain := map[string]string{} // old chain hash -> new
		var last uint64
		cp := c.copyStore(t, c.events(t), func(m stored) *nats.Msg {
			e, err := events.Decode(events.Header(m.msg.Header), m.msg.Data)
			if err != nil {
				t.Fatal(err)
			}
			if e.RunID != run {
				return m.msg
			}
			old := e.ChainHash()
			if e.Stage == events.StageToolAfter && altered == 0 {
				altered = m.seq
				e.Data = []byte(strings.Replace(string(e.Data), `"content":"`, `"content":"forged `, 1))
			}
			if n, ok := chain[e.PrevHash]; ok {
				e.PrevHash = n
			}
			if e.Signature != "" {
				sig, err := c.kp.Sign([]byte(e.ChainHash()))
				if err != nil {
					t.Fatal(err)
				}
				e.Signature = base64.RawURLEncoding.EncodeToString(sig)
			}
			chain[old] = e.ChainHash()
			if old != e.ChainHash() {
				last = m.seq
			}
			h, body, err := events.Encode(e)
			if err != nil {
				t.Fatal(err)
			}
			return &nats.Msg{Subject: m.msg.Subject, Header: nats.Header(h), Data: body}
		})
		// Signed with the operator's own key, the rewritten run verifies.
		for _, rv := range verifyRuns(t, cp, c.kp) {
			if !rv.OK() || !rv.Ended {
				t.Fatalf("the rewritten run's chain: %+v", rv)
			}
		}
		v := verifyStream(t, cp, c.key, tlogbus.VerifyConfig{})
		f := only(t, v, tlog.FindAltered, altered, last)
		if !strings.Contains(f.Detail, run) {
			t.Fatalf("the finding does not name the run: %s", f.Detail)
		}
	})
	t.Run("StreamReplaced", func(t *testing.T) {
		c := newCheckpointed(t)
		other := bustest.StartBus(t)
		runs(t, other, c.kp, "s1", 3) // valid, signed chains
		copyInto(t, other, rawMessages(t, c.b.JetStream(), c.b.Names().Checkpoints), nil)
		for _, rv := range verifyRuns(t, other, c.kp) {
			if !rv.OK() {
				t.Fatalf("the other stream's runs: %+v", rv)
			}
		}
		v := verifyStream(t, other, c.key, tlogbus.VerifyConfig{})
		st, _ := other.EventsState(testCtx(t))
		latest := v.Checkpoint.Size
		f := only(t, v, tlog.FindReplaced, 1, min(st.LastSeq, latest))
		_ = f
	})
}
