package natsconf_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/loop/tools"
	"github.com/hookbus/hookbus/tlog"
	"github.com/hookbus/hookbus/tlog/tlogbus"
	tnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// TestCheckpointerWitnessAndAuditor: with accounts.conf's users, the
// loop's events are checkpointed by the checkpointer user, each checkpoint
// cosigned by the witness user over NATS, and the auditor proves the
// stream against them; none of them gets a permission error doing so.
// Each may do nothing more: the checkpointer publishes no event and deletes
// nothing, only it (and the admin) writes the checkpoints, and the witness
// publishes nothing but replies.
func TestCheckpointerWitnessAndAuditor(t *testing.T) {
	f := startSingle(t)
	lb, lnc, lerrs := f.userBus(t, "loop")
	eng, err := loop.New(loop.Config{Emitter: lb, History: lb, Model: scripted.New(scripted.Demo()), Tools: tools.Builtin("")})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "What time is it?"}
		if res, err := eng.Run(testContext(t), req); err != nil || res.Reason != events.ReasonDone {
			t.Fatalf("run as loop: %+v, %v", res, err)
		}
	}
	noErrors(t, lnc)

	logS, logV := noteKey(t, "example.com/hookbus")
	wskey, _, err := tlog.GenerateKey("witness.example.com/w1")
	if err != nil {
		t.Fatal(err)
	}
	ws, err := tnote.NewSignerForCosignatureV1(wskey)
	if err != nil {
		t.Fatal(err)
	}
	w, err := tlog.OpenWitness(t.TempDir(), ws, logV)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	_, wnc, werrs := f.userBus(t, "witness")
	svc, err := tlogbus.ServeWitness(wnc, events.Subjects{}, "w1", w, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = svc.Stop() }()
	discoveryRefused(t, werrs)

	cb, cnc, cerrs := f.userBus(t, "checkpointer")
	cp, err := tlogbus.NewCheckpointer(cb, tlogbus.CheckpointerConfig{Signer: logS, Verifier: logV, Every: 10, Interval: 50 * time.Millisecond,
		Witnesses: []tlogbus.WitnessRef{{Name: "w1", Key: ws.Verifier()}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- cp.Run(ctx) }()
	last := streamLast(t, lb)
	eventually(t, "the checkpointer covers the stream", func() bool { return cp.Status().Size == last })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("checkpointer: %v", err)
	}
	if got := cp.Status().Cosigned["w1"]; got != last {
		t.Fatalf("the witness cosigned up to %d of %d", got, last)
	}
	noErrors(t, cnc)
	select {
	case err := <-cerrs:
		t.Fatalf("checkpointer: %v", err)
	default:
	}

	ab, anc, _ := f.userBus(t, "auditor")
	v, err := tlogbus.VerifyStream(testContext(t), ab, tlogbus.VerifyConfig{LogKey: logV, Witnesses: []note.Verifier{ws.Verifier()}})
	if err != nil {
		t.Fatalf("verify as auditor: %v", err)
	}
	if !v.Intact || !v.Proven || v.Compared != int(last) {
		t.Fatalf("verify as auditor: %+v", v)
	}
	noErrors(t, anc)

	for _, subj := range []string{
		"hookbus.evt.demo.s1.intake",
		"hookbus.run.demo",
		"$KV.hookbus_hooks.x",
		"$JS.API.STREAM.MSG.DELETE.HOOKBUS_EVENTS",
		"$JS.API.STREAM.MSG.DELETE.HOOKBUS_CHECKPOINTS",
		"$JS.API.STREAM.PURGE.HOOKBUS_CHECKPOINTS",
		"$JS.API.STREAM.UPDATE.HOOKBUS_CHECKPOINTS",
		"$JS.API.STREAM.DELETE.HOOKBUS_CHECKPOINTS",
		"$JS.API.CONSUMER.DELETE.HOOKBUS_EVENTS.hookbus-checkpointer",
		"$JS.API.CONSUMER.CREATE.HOOKBUS_EVENTS.billing",
	} {
		denyPublish(t, cnc, cerrs, subj)
	}
	denyPublish(t, lnc, lerrs, "hookbus.checkpoint")
	denyPublish(t, lnc, lerrs, "hookbus.witness.w1.add-checkpoint")
	anc2, aerrs := f.connect(t, "auditor")
	denyPublish(t, anc2, aerrs, "hookbus.checkpoint")
	denyPublish(t, anc2, aerrs, "$JS.API.STREAM.MSG.DELETE.HOOKBUS_CHECKPOINTS")
	for _, subj := range []string{"hookbus.evt.demo.s1.intake", "hookbus.checkpoint", "$JS.API.STREAM.MSG.DELETE.HOOKBUS_EVENTS", "$JS.API.CONSUMER.CREATE.HOOKBUS_EVENTS.x", "$JS.API.STREAM.INFO.HOOKBUS_EVENTS"} {
		denyPublish(t, wnc, werrs, subj)
	}
	if n := streamMsgs(t, jetStream(t, anc), "HOOKBUS_EVENTS"); n != last {
		t.Fatalf("the events stream holds %d messages, want %d", n, last)
	}
}

// noteKey returns a new signed-note key's signer and verifier.
func noteKey(t *testing.T, name string) (note.Signer, note.Verifier) {
	t.Helper()
	skey, _, err := tlog.GenerateKey(name)
	if err != nil {
		t.Fatal(err)
	}
	s, v, err := tnote.NewEd25519SignerVerifier(skey)
	if err != nil {
		t.Fatal(err)
	}
	return s, v
}

// streamLast is the events stream's last sequence.
func streamLast(t *testing.T, b *bus.Bus) uint64 {
	t.Helper()
	st, err := b.EventsState(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	return st.LastSeq
}
