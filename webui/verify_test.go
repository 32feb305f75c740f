package webui_test

import (
	"context"
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
	getJSON(t, trusting.URL+"/api/runs/"+unsigned.RunID+"?agent=planner&session=unsigned", 200, &v)
	if got := problemKinds(v.Verify); !slices.Equal(got, []string{audit.ProblemUnsigned}) {
		t.Fatalf("an unsigned run: %v", v.Verify)
	}
	getJSON(t, trusting.URL+"/api/runs/"+tampered.RunID+"?agent=planner&session=tampered", 200, &v)
	if v.Verify.OK() || !slices.ContainsFunc(v.Verify.Problems, func(p audit.Problem) bool { return p.Kind == audit.ProblemRemoved && p.Seq == seq }) {
		t.Fatalf("a run with seq %d removed: %+v", seq, v.Verify)
	}

	distrusting := serve(t, b, false)
	getJSON(t, distrusting.URL+"/api/runs/"+signed.RunID+"?agent=planner&session=signed", 200, &v)
	if got := problemKinds(v.Verify); !slices.Equal(got, []string{audit.ProblemUnknownSigner}) {
		t.Fatalf("a signed run, its key not trusted: %+v", v.Verify)
	}
}
