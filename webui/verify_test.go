package webui_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nkeys"

	"github.com/hookbus/hookbus/webui"
)

// signer returns a fresh signing key and its public key.
func signer(t *testing.T) (nkeys.KeyPair, string) {
	t.Helper()
	kp, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	return kp, pub
}

func problemKinds(v *audit.RunVerdict) []string {
	var out []string
	for _, p := range v.Problems {
		out = append(out, p.Kind)
	}
	return out
}

// removeEvent deletes the stored event of run at stage from the stream (a
// tampered record) and returns its run seq.
func removeEvent(t *testing.T, ctx context.Context, b *bus.Bus, run string, stage events.Stage) uint64 {
	t.Helper()
	var victim *events.Event
	if _, err := b.Replay(ctx, bus.Filter{Run: run}, func(e *events.Event) error {
		if e.Stage == stage && victim == nil {
			victim = e
		}
		return nil
	}); err != nil || victim == nil {
		t.Fatalf("no %s of run %s to remove: %v", stage, run, err)
	}
	s, err := b.JetStream().Stream(ctx, b.Names().Events)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMsg(ctx, victim.Stored); err != nil {
		t.Fatal(err)
	}
	return victim.Seq
}

// The run endpoint verifies the run's record: intact and signed by a
// trusted key, signed by a key not trusted, unsigned, or with an event
// removed (named by its seq).
func TestRunVerified(t *testing.T) {
	ctx := ctxT(t)
	b := bustest.StartBus(t)
	kp, pub := signer(t)
	signed := recordSignedRun(t, ctx, b, "signed", kp)
	unsigned := recordRun(t, ctx, b, "unsigned")
	tampered := recordSignedRun(t, ctx, b, "tampered", kp)
	seq := removeEvent(t, ctx, b, tampered.RunID, events.StageStepCompleted)

	trusting := serveTrusting(t, b, false, map[string]bool{pub: true})
	var v webui.RunView
	getJSON(t, trusting.URL+"/api/runs/"+signed.RunID+"?agent=planner&session=signed", 200, &v)
	if v.Verify == nil || !v.Verify.OK() || v.Verify.Signer != pub || !v.Verify.Ended {
		t.Fatalf("a signed run, its key trusted: %+v", v.Verify)
	}
	for _, e := range v.Entries {
		if e.Child != nil && (e.Child.Verify == nil || !e.Child.Verify.OK() || e.Child.Verify.RunID != e.Child.Run.RunID) {
			t.Fatalf("the child run %s: %+v", e.Child.Run.RunID, e.Child.Verify)
		}
	}
	v = webui.RunView{}
	getJSON(t, trusting.URL+"/api/runs/"+unsigned.RunID+"?agent=planner&session=unsigned", 200, &v)
	if got := problemKinds(v.Verify); !slices.Equal(got, []string{audit.ProblemUnsigned}) {
		t.Fatalf("an unsigned run: %v", v.Verify)
	}
	if !v.Verify.OK() || !v.Verify.Intact || v.Verify.Problems[0].Fails {
		t.Fatalf("an unsigned run whose record is intact does not verify: %+v", v.Verify)
	}
	v = webui.RunView{}
	getJSON(t, trusting.URL+"/api/runs/"+tampered.RunID+"?agent=planner&session=tampered", 200, &v)
	if v.Verify.OK() || !slices.ContainsFunc(v.Verify.Problems, func(p audit.Problem) bool { return p.Kind == audit.ProblemRemoved && p.Seq == seq }) {
		t.Fatalf("a run with seq %d removed: %+v", seq, v.Verify)
	}

	distrusting := serve(t, b, false)
	v = webui.RunView{}
	getJSON(t, distrusting.URL+"/api/runs/"+signed.RunID+"?agent=planner&session=signed", 200, &v)
	if got := problemKinds(v.Verify); !slices.Equal(got, []string{audit.ProblemUnknownSigner}) {
		t.Fatalf("a signed run, its key not trusted: %+v", v.Verify)
	}
	if !v.Verify.OK() {
		t.Fatalf("a signed run, no key given to the page: %+v; want it intact, its signer noted", v.Verify)
	}
	_, otherPub := signer(t)
	other := serveTrusting(t, b, false, map[string]bool{otherPub: true})
	v = webui.RunView{}
	getJSON(t, other.URL+"/api/runs/"+signed.RunID+"?agent=planner&session=signed", 200, &v)
	if v.Verify.OK() || !v.Verify.Problems[0].Fails {
		t.Fatalf("a signed run, another key given to the page: %+v; want it failed", v.Verify)
	}
}

// The page's verdict follows observer verify's rule: with RequireSigned,
// an unsigned run fails; a run without an end yet does not.
func TestRunVerifiedRequiringSignatures(t *testing.T) {
	ctx := ctxT(t)
	b := bustest.StartBus(t)
	unsigned := recordRun(t, ctx, b, "unsigned")
	srv, err := webui.New(webui.Config{Bus: b, RequireSigned: true})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	var v webui.RunView
	getJSON(t, hs.URL+"/api/runs/"+unsigned.RunID+"?agent=planner&session=unsigned", 200, &v)
	if v.Verify.OK() || v.Verify.Intact || !v.Verify.Has(audit.ProblemUnsigned) {
		t.Fatalf("an unsigned run, signatures required: %+v", v.Verify)
	}
	removeEvent(t, ctx, b, unsigned.RunID, events.StageRunCompleted)
	v = webui.RunView{}
	getJSON(t, hs.URL+"/api/runs/"+unsigned.RunID+"?agent=planner&session=unsigned", 200, &v)
	if !v.Verify.OK() || v.Verify.Ended || !v.Verify.Has(audit.ProblemNoEnd) {
		t.Fatalf("a run without an end: %+v; want it intact so far", v.Verify)
	}
}
