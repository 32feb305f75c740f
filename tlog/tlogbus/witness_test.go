package tlogbus_test

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/embedded"
	"github.com/hookbus/hookbus/tlog"
	"github.com/hookbus/hookbus/tlog/tlogbus"
	tnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// witness serves a witness of key's log on b's server, its state in dir.
func witness(t *testing.T, srv *embedded.Server, b *bus.Bus, dir string, key logKey) (*tlog.Witness, note.Verifier) {
	t.Helper()
	skey, _, err := tlog.GenerateKey("witness.test/w1")
	if err != nil {
		t.Fatal(err)
	}
	s, err := tnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		t.Fatal(err)
	}
	w, err := tlog.OpenWitness(dir, s, key.verifier)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	svc, err := tlogbus.ServeWitness(bustest.Conn(t, srv), b.Subjects(), "w1", w, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	return w, s.Verifier()
}

// The checkpointer has each checkpoint cosigned by the witness over NATS;
// verification that requires the witness proves the stream against a
// cosigned checkpoint, or against the witness' own state file. The witness
// refuses a checkpoint of another history under the log's key, and
// verification requiring it fails a log it never cosigned.
func TestWitnessOverNATS(t *testing.T) {
	srv, nc := bustest.Start(t)
	b := bustest.Provision(t, nc)
	kp := signingKey(t)
	runs(t, b, kp, "s1", 2)
	key := newLogKey(t, logName)
	dir := t.TempDir()
	w, wv := witness(t, srv, b, dir, key)

	cfg := tlogbus.CheckpointerConfig{Signer: key.signer, Verifier: key.verifier, Every: 9,
		Witnesses: []tlogbus.WitnessRef{{Name: "w1", Key: wv}}}
	r := startCheckpointer(t, b, cfg)
	r.caughtUp(t, b)
	runs(t, b, kp, "s1", 1)
	r.caughtUp(t, b)
	if err := r.halt(t); err != nil {
		t.Fatal(err)
	}
	st := r.c.Status()
	if st.Cosigned["w1"] != st.Size {
		t.Fatalf("the witness cosigned up to %d, the log is at %d", st.Cosigned["w1"], st.Size)
	}
	v := verifyStream(t, b, key, tlogbus.VerifyConfig{Witnesses: []note.Verifier{wv}})
	if !v.Intact || !v.Proven || len(v.Cosigned) != 1 || v.Checkpoint.Size != st.Size {
		t.Fatalf("verify with the witness:\n%s", explain(v))
	}
	state, err := os.ReadFile(w.StatePath(logName))
	if err != nil {
		t.Fatal(err)
	}
	v = verifyStream(t, b, key, tlogbus.VerifyConfig{Witnesses: []note.Verifier{wv}, Checkpoint: state})
	if !v.Intact || !v.Proven || v.Checkpoint.Size != st.Size {
		t.Fatalf("verify against the witness' state:\n%s", explain(v))
	}
	remote, err := tlogbus.WitnessCheckpoint(testCtx(t), b.Conn(), b.Subjects(), "w1", "")
	if err != nil || string(remote) != string(state) {
		t.Fatalf("the witness' checkpoint over NATS: %q, %v", remote, err)
	}

	// Another history under the same key (a store rewritten and
	// checkpointed again): the witness refuses it.
	forged := bustest.StartBus(t)
	runs(t, forged, kp, "s1", 4)
	checkpointAll(t, forged, tlogbus.CheckpointerConfig{Signer: key.signer, Verifier: key.verifier, Every: 9})
	fl, err := tlogbus.LoadLog(testCtx(t), forged, key.verifier)
	if err != nil {
		t.Fatal(err)
	}
	latest := fl.Latest()
	proof, err := fl.Tree.ConsistencyProof(st.Size, latest.Size)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tlogbus.AskWitness(testCtx(t), b.Conn(), b.Subjects(), "w1", tlog.AddCheckpointRequest(st.Size, proof, latest.Note))
	var we *tlog.WitnessError
	if !errors.As(err, &we) || we.Status != tlog.StatusUnprocessed || !errors.Is(err, tlog.ErrProof) {
		t.Fatalf("the witness answered a forged history with %v", err)
	}
	if after, _ := tlog.OpenCheckpoint(w.LatestOf(""), key.verifier); after.Size != st.Size || after.Root != v.Checkpoint.Root {
		t.Fatalf("the witness' state moved: %+v", after)
	}
	// The forged log carries no cosignature: verification that requires
	// the witness fails it, though its own checkpoints are consistent.
	v = verifyStream(t, forged, key, tlogbus.VerifyConfig{Witnesses: []note.Verifier{wv}})
	only(t, v, tlog.FindUnwitnessed, 0, 0)
	// And against the witness' checkpoint, the forged stream is another
	// history.
	v = verifyStream(t, forged, key, tlogbus.VerifyConfig{Witnesses: []note.Verifier{wv}, Checkpoint: state})
	t.Logf("the forged stream against the witness' checkpoint:\n%s", explain(v))
	if v.Intact || !v.Has(tlog.FindInconsistent) {
		t.Fatalf("the forged stream against the witness' checkpoint:\n%s", explain(v))
	}
}

// A witness that was away catches up: checkpoints stored meanwhile go
// without its cosignature; the next one is cosigned with a consistency
// proof from the last it cosigned, made from the stored checkpoints, even
// by a restarted checkpointer that learns that size from the witness' 409.
func TestWitnessCatchesUp(t *testing.T) {
	srv, nc := bustest.Start(t)
	b := bustest.Provision(t, nc)
	kp := signingKey(t)
	key := newLogKey(t, logName)
	skey, _, _ := tlog.GenerateKey("witness.test/w1")
	ws, _ := tnote.NewSignerForCosignatureV1(skey)
	w, err := tlog.OpenWitness(t.TempDir(), ws, key.verifier)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	serve := func() func() {
		svc, err := tlogbus.ServeWitness(bustest.Conn(t, srv), b.Subjects(), "w1", w, nil)
		if err != nil {
			t.Fatal(err)
		}
		return func() { _ = svc.Stop() }
	}
	cfg := tlogbus.CheckpointerConfig{Signer: key.signer, Verifier: key.verifier, Every: 9, WitnessTimeout: time.Second,
		Witnesses: []tlogbus.WitnessRef{{Name: "w1", Key: ws.Verifier()}}}

	stop := serve()
	runs(t, b, kp, "s1", 1)
	r := startCheckpointer(t, b, cfg)
	r.caughtUp(t, b)
	cosigned := r.c.Status().Cosigned["w1"]
	stop() // the witness goes away
	runs(t, b, kp, "s1", 1)
	r.caughtUp(t, b)
	if err := r.halt(t); err != nil {
		t.Fatal(err)
	}
	if st := r.c.Status(); st.Cosigned["w1"] != cosigned || st.Size <= cosigned {
		t.Fatalf("with the witness away: %+v (it cosigned %d)", st, cosigned)
	}

	defer serve()()
	runs(t, b, kp, "s1", 1)
	r = startCheckpointer(t, b, cfg)
	r.caughtUp(t, b)
	if err := r.halt(t); err != nil {
		t.Fatal(err)
	}
	st := r.c.Status()
	if st.Cosigned["w1"] != st.Size {
		t.Fatalf("after the witness came back: %+v", st)
	}
	latest, err := tlog.OpenCheckpoint(w.LatestOf(""), key.verifier, ws.Verifier())
	if err != nil || latest.Size != st.Size {
		t.Fatalf("the witness' state: %+v, %v", latest, err)
	}
	v := verifyStream(t, b, key, tlogbus.VerifyConfig{Witnesses: []note.Verifier{ws.Verifier()}})
	if !v.Intact || !v.Proven || v.Checkpoint.Size != st.Size {
		t.Fatalf("verify with the witness:\n%s", explain(v))
	}
}
