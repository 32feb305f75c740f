package interceptors_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// A shadow registration is not called by Run; Outcome.Shadow calls it in
// the background on the payload as the chain left it, and its decision goes
// to the sink, marked, never applied.
func TestShadowRegistrationIsRecordedNeverApplied(t *testing.T) {
	type got struct {
		ev  *events.Event
		rec interceptors.CallRecord
	}
	sunk := make(chan got, 1)
	chain := interceptors.NewChain(interceptors.WithShadowSink(func(_ context.Context, ev *events.Event, rec interceptors.CallRecord) {
		sunk <- got{ev, rec}
	}))
	release := make(chan struct{})
	if _, err := chain.Register(interceptors.Registration{Plugin: "candidate", Stage: events.StageToolBefore, Mode: interceptors.ModeShadow},
		interceptors.Func(func(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			<-release // slower than the run
			return &interceptors.Decision{Kind: interceptors.Deny, Reason: "would deny " + req.Event.Subject}, nil
		})); err != nil {
		t.Fatal(err)
	}
	if _, err := chain.Register(interceptors.Registration{Plugin: "rewriter", Stage: events.StageToolBefore, Order: -1},
		interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Modify, Patch: []interceptors.PatchOp{{Op: "replace", Path: "/call/arguments/cmd", Value: []byte(`"pwd"`)}}}, nil
		})); err != nil {
		t.Fatal(err)
	}
	if n := chain.Matches(events.StageToolBefore, "bash", "a"); n != 2 {
		t.Fatalf("Matches counts the shadow registration too: %d", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out, err := chain.Run(ctx, toolEvent(t, "bash"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Decision != interceptors.Modify || len(out.Records) != 1 || out.Shadow == nil {
		t.Fatalf("outcome %+v", out)
	}
	out.Shadow("stored-id")
	cancel() // the run is over: the shadow call goes on
	close(release)
	select {
	case g := <-sunk:
		if !g.rec.Shadow || g.rec.Decision != interceptors.Deny || g.rec.EventID != "stored-id" || g.rec.Reason != "would deny bash" {
			t.Fatalf("shadow record %+v", g.rec)
		}
		if d := g.rec.HookDecided(); !d.Shadow || d.Decision != "deny" {
			t.Fatalf("hook.decided of a shadow call %+v", d)
		}
		if string(g.ev.Data) != string(out.Data) || g.ev.ID != "stored-id" {
			t.Fatalf("shadow saw %s (id %s), chain left %s", g.ev.Data, g.ev.ID, out.Data)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no shadow record")
	}
}
