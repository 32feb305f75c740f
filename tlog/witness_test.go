package tlog_test

import (
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/hookbus/hookbus/tlog"
	tnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// testLog is a log: a key and a tree.
type testLog struct {
	signer   note.Signer
	verifier note.Verifier
	tree     *tlog.Tree
}

func newTestLog(t *testing.T, skey string) *testLog {
	t.Helper()
	s, v, err := tnote.NewEd25519SignerVerifier(skey)
	if err != nil {
		t.Fatal(err)
	}
	tr, _ := tlog.NewTree(0, nil)
	return &testLog{signer: s, verifier: v, tree: tr}
}

// grow appends n leaves named after tag and returns the signed checkpoint.
func (l *testLog) grow(t *testing.T, tag string, n int) []byte {
	t.Helper()
	for i := range n {
		l.tree.Append(tlog.HashLeaf([]byte(tag + string(rune('a'+i%26)) + string(rune(i)))))
	}
	root, err := l.tree.Root(l.tree.Size())
	if err != nil {
		t.Fatal(err)
	}
	signed, err := tlog.Checkpoint{Origin: l.signer.Name(), Size: l.tree.Size(), Root: root}.Sign(l.signer)
	if err != nil {
		t.Fatal(err)
	}
	return signed
}

func (l *testLog) request(t *testing.T, old uint64, signed []byte) []byte {
	t.Helper()
	var proof []tlog.Hash
	if old > 0 {
		var err error
		if proof, err = l.tree.ConsistencyProof(old, l.tree.Size()); err != nil {
			t.Fatal(err)
		}
	}
	return tlog.AddCheckpointRequest(old, proof, signed)
}

func status(err error) int {
	var we *tlog.WitnessError
	if errors.As(err, &we) {
		return we.Status
	}
	return 0
}

func newWitness(t *testing.T, dir, skey string, logs ...note.Verifier) (*tlog.Witness, note.Verifier) {
	t.Helper()
	s, err := tnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		t.Fatal(err)
	}
	w, err := tlog.OpenWitness(dir, s, logs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w, s.Verifier()
}

// The witness cosigns a checkpoint consistent with the last it cosigned,
// refuses one that is not (another history under the same key), keeps its
// state across a restart, and answers tlog-witness' statuses.
func TestWitness(t *testing.T) {
	skey, _, err := tlog.GenerateKey("log.test/hookbus")
	if err != nil {
		t.Fatal(err)
	}
	good, fork := newTestLog(t, skey), newTestLog(t, skey)
	dir, wkey := t.TempDir()+"/w", mustKey(t, "witness.test/w1")
	w, wv := newWitness(t, dir, wkey, good.verifier)

	first := good.grow(t, "good", 10)
	lines, err := w.AddCheckpoint(good.request(t, 0, first))
	if err != nil {
		t.Fatal(err)
	}
	s, err := tlog.OpenCheckpoint(tlog.WithSignatures(first, lines), good.verifier, wv)
	if err != nil || !s.CosignedBy(wv.Name()) || s.Cosigned[0].Time.IsZero() {
		t.Fatalf("cosigned: %+v, %v", s, err)
	}
	second := good.grow(t, "good", 7)
	if _, err := w.AddCheckpoint(good.request(t, 10, second)); err != nil {
		t.Fatal(err)
	}

	// Another history signed by the same key: the same size, another root,
	// then a larger tree that does not extend what was cosigned.
	forked := fork.grow(t, "fork", 17)
	if _, err := w.AddCheckpoint(fork.request(t, 17, forked)); status(err) != tlog.StatusUnprocessed || !errors.Is(err, tlog.ErrProof) {
		t.Fatalf("same size, another root: %v", err)
	}
	forked = fork.grow(t, "fork", 5)
	if _, err := w.AddCheckpoint(fork.request(t, 17, forked)); status(err) != tlog.StatusUnprocessed {
		t.Fatalf("a larger tree of another history: %v", err)
	}
	if entries, _ := os.ReadDir(dir + "/refused"); len(entries) != 2 {
		t.Fatalf("%d refused requests kept as evidence, want 2", len(entries))
	}

	// Statuses.
	if _, err := w.AddCheckpoint(good.request(t, 0, second)); status(err) != tlog.StatusConflict {
		t.Fatalf("old size 0 after 17: %v", err)
	} else if we := (*tlog.WitnessError)(nil); errors.As(err, &we) && we.Size != 17 {
		t.Fatalf("conflict names size %d, want 17", we.Size)
	}
	other := newTestLog(t, mustKey(t, "other.test/log"))
	if _, err := w.AddCheckpoint(other.request(t, 0, other.grow(t, "x", 3))); status(err) != tlog.StatusNotFound {
		t.Fatalf("unknown origin: %v", err)
	}
	impostor := newTestLog(t, mustKey(t, "log.test/hookbus")) // same name, another key
	if _, err := w.AddCheckpoint(impostor.request(t, 17, impostor.grow(t, "x", 20))); status(err) != tlog.StatusForbidden {
		t.Fatalf("another key: %v", err)
	}
	if _, err := w.AddCheckpoint([]byte("nonsense")); status(err) != tlog.StatusBadRequest {
		t.Fatalf("garbage: %v", err)
	}
	third := good.grow(t, "good", 3)
	if _, err := w.AddCheckpoint(tlog.AddCheckpointRequest(30, nil, third)); status(err) != tlog.StatusBadRequest {
		t.Fatalf("old size beyond the checkpoint: %v", err)
	}

	// Restarted on its state, it goes on from the last checkpoint it
	// cosigned; a second witness on the same state is refused.
	w.Close()
	w, _ = newWitness(t, dir, wkey, good.verifier)
	if latest, err := tlog.OpenCheckpoint(w.LatestOf(""), good.verifier, wv); err != nil || latest.Size != 17 || !latest.CosignedBy(wv.Name()) {
		t.Fatalf("the state after a restart: %+v, %v", latest, err)
	}
	if _, err := w.AddCheckpoint(good.request(t, 17, third)); err != nil {
		t.Fatalf("after a restart: %v", err)
	}
	ws, _ := tnote.NewSignerForCosignatureV1(wkey)
	if w2, err := tlog.OpenWitness(dir, ws, good.verifier); !errors.Is(err, tlog.ErrLocked) {
		if w2 != nil {
			w2.Close()
		}
		t.Fatalf("a second witness on one state: %v", err)
	}
}

func mustKey(t *testing.T, name string) string {
	t.Helper()
	skey, _, err := tlog.GenerateKey(name)
	if err != nil {
		t.Fatal(err)
	}
	return skey
}

// Concurrent requests from the same old size: exactly one is cosigned, so
// the witness' state never rolls back.
func TestWitnessChecksAndRecordsAtomically(t *testing.T) {
	skey := mustKey(t, "log.test/hookbus")
	l := newTestLog(t, skey)
	w, _ := newWitness(t, t.TempDir()+"/w", mustKey(t, "witness.test/w1"), l.verifier)
	first := l.grow(t, "a", 4)
	if _, err := w.AddCheckpoint(l.request(t, 0, first)); err != nil {
		t.Fatal(err)
	}
	var reqs [][]byte
	for range 8 {
		reqs = append(reqs, l.request(t, 4, l.grow(t, "b", 1)))
	}
	var (
		wg sync.WaitGroup
		mu sync.Mutex
		ok int
	)
	for _, r := range reqs {
		wg.Go(func() {
			if _, err := w.AddCheckpoint(r); err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			} else if status(err) != tlog.StatusConflict {
				t.Errorf("unexpected: %v", err)
			}
		})
	}
	wg.Wait()
	if ok != 1 {
		t.Fatalf("%d of 8 requests from size 4 cosigned, want 1", ok)
	}
}
