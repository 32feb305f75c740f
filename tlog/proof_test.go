package tlog_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/tlog"
	"github.com/nats-io/nkeys"
	tnote "github.com/transparency-dev/formats/note"
)

// provenRun returns a signed checkpoint over a tree holding a run of three
// chained events (its end signed by kp) among other leaves, and the proof of
// the run's events.
func provenRun(t *testing.T, log *testLog, kp nkeys.KeyPair) []byte {
	t.Helper()
	run := events.NewID()
	leaves := map[uint64][]byte{}
	prev := ""
	for i, st := range []events.Stage{events.StageIntake, events.StageRunStarted, events.StageRunCompleted} {
		e := vectorEvent()
		e.ID, e.Stage, e.RunID, e.Seq, e.PrevHash = events.NewID(), st, run, uint64(i+1), prev
		if st == events.StageRunCompleted {
			e.Signer, _ = kp.PublicKey()
			sig, _ := kp.Sign([]byte(e.ChainHash()))
			e.Signature = base64.RawURLEncoding.EncodeToString(sig)
		}
		prev = e.ChainHash()
		log.grow(t, "other", 3)
		seq := log.tree.Size() + 1
		leaf := tlog.Entry{Forms: [][]byte{tlog.EventForm("hookbus.evt.demo.s1."+string(st), e, sha256.Sum256(e.Data))}}.Leaf(seq, 0)
		log.tree.Append(tlog.HashLeaf(leaf))
		leaves[seq-1] = leaf
	}
	signed := log.grow(t, "other", 2)
	s, err := tlog.OpenCheckpoint(signed, log.verifier)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tlog.NewProof(s, run, log.tree, leaves)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A proof holds with the log's key alone; a changed leaf, a changed path,
// another log's key or a witness' cosignature required and absent each make
// it fail, naming why.
func TestProofVerifiesOffline(t *testing.T) {
	log := newTestLog(t, mustKey(t, "log.test/hookbus"))
	kp, _ := nkeys.CreateAccount()
	data := provenRun(t, log, kp)
	res, err := tlog.VerifyProof(data, log.verifier)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	if len(res.Events) != 3 || !res.Ended || res.Signer != pub || !res.Linked {
		t.Fatalf("result: %+v", res)
	}

	edit := func(f func(p *tlog.Proof)) []byte {
		var p tlog.Proof
		if err := json.Unmarshal(data, &p); err != nil {
			t.Fatal(err)
		}
		f(&p)
		out, _ := json.Marshal(p)
		return out
	}
	forged := edit(func(p *tlog.Proof) {
		leaf, _ := base64.StdEncoding.DecodeString(p.Entries[1].Leaf)
		leaf = []byte(strings.Replace(string(leaf), "hookbus/loop", "hookbus/l00p", 1))
		h := tlog.HashLeaf(leaf)
		p.Entries[1].Leaf, p.Entries[1].LeafHash = base64.StdEncoding.EncodeToString(leaf), h.String()
	})
	if _, err := tlog.VerifyProof(forged, log.verifier); !errors.Is(err, tlog.ErrProof) {
		t.Fatalf("a changed leaf: %v", err)
	}
	swapped := edit(func(p *tlog.Proof) {
		p.Entries[0].Inclusion[0], p.Entries[0].Inclusion[1] = p.Entries[0].Inclusion[1], p.Entries[0].Inclusion[0]
	})
	if _, err := tlog.VerifyProof(swapped, log.verifier); !errors.Is(err, tlog.ErrProof) {
		t.Fatalf("a changed path: %v", err)
	}
	other := newTestLog(t, mustKey(t, "log.test/hookbus"))
	if _, err := tlog.VerifyProof(data, other.verifier); !errors.Is(err, tlog.ErrSignature) {
		t.Fatalf("another key: %v", err)
	}
	ws, _ := tnote.NewSignerForCosignatureV1(mustKey(t, "witness.test/w1"))
	if _, err := tlog.VerifyProof(data, log.verifier, ws.Verifier()); !errors.Is(err, tlog.ErrSignature) {
		t.Fatalf("a witness required: %v", err)
	}
}

// A proof that holds entry by entry but is not of the whole run fails,
// naming why: an event left out, the end left out, an entry twice.
func TestProofOfPartOfARunFails(t *testing.T) {
	log := newTestLog(t, mustKey(t, "log.test/hookbus"))
	kp, _ := nkeys.CreateAccount()
	data := provenRun(t, log, kp)
	edit := func(f func(p *tlog.Proof)) []byte {
		var p tlog.Proof
		if err := json.Unmarshal(data, &p); err != nil {
			t.Fatal(err)
		}
		f(&p)
		out, _ := json.Marshal(p)
		return out
	}
	for _, tc := range []struct {
		name string
		edit func(p *tlog.Proof)
		want string
	}{
		{"EventLeftOut", func(p *tlog.Proof) { p.Entries = append(p.Entries[:1], p.Entries[2:]...) }, tlog.FindLeftOut},
		{"FirstLeftOut", func(p *tlog.Proof) { p.Entries = p.Entries[1:] }, tlog.FindLeftOut},
		{"EndLeftOut", func(p *tlog.Proof) { p.Entries = p.Entries[:2] }, tlog.FindNoEnd},
		{"EntryTwice", func(p *tlog.Proof) { p.Entries = append(p.Entries, p.Entries[1]) }, tlog.FindDuplicate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tlog.VerifyProof(edit(tc.edit), log.verifier)
			if !errors.Is(err, tlog.ErrIncomplete) || res == nil || res.Complete {
				t.Fatalf("want ErrIncomplete, got %v (%+v)", err, res)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("the error does not name %s: %v", tc.want, err)
			}
			var kinds []string
			for _, f := range res.Failing() {
				kinds = append(kinds, f.Kind)
				if !f.Fails || f.Detail == "" {
					t.Fatalf("finding %+v", f)
				}
			}
			if len(kinds) != 1 || kinds[0] != tc.want {
				t.Fatalf("findings %v, want [%s]", kinds, tc.want)
			}
		})
	}
	if res, err := tlog.VerifyProof(data, log.verifier); err != nil || !res.Complete || len(res.Findings) != 0 {
		t.Fatalf("the whole run: %+v %v", res, err)
	}
}
