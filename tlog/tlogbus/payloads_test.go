package tlogbus_test

import (
	"testing"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/tlog"
	"github.com/hookbus/hookbus/tlog/tlogbus"
	"github.com/nats-io/nats.go/jetstream"
)

// A checkpointed claim-checked event whose large payload is gone fails the
// verification (payload_missing), even though its leaf still matches (the
// reference names the data's hash); AllowMissingPayloads makes it a note.
func TestVerifyFailsOnMissingPayload(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	// A payloads store whose objects can be deleted (hookbus' own refuses
	// purges and deletes): how the test loses one.
	js := b.JetStream()
	if err := js.DeleteObjectStore(ctx, b.Names().Payloads); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: b.Names().Payloads}); err != nil {
		t.Fatal(err)
	}
	small := bustest.Event(t, "a", "s", "r", events.StageIntake, 1)
	big := bustest.SizedEvent(t, "a", "s", "r", 2, 2<<20)
	for _, e := range []*events.Event{small, big} {
		if err := b.PublishSync(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	key := newLogKey(t, logName)
	checkpointAll(t, b, tlogbus.CheckpointerConfig{Signer: key.signer, Verifier: key.verifier, Every: 10})
	if v := verifyStream(t, b, key, tlogbus.VerifyConfig{}); !v.Intact {
		t.Fatalf("before the payload is lost:\n%s", explain(v))
	}
	obs, err := js.ObjectStore(ctx, b.Names().Payloads)
	if err != nil {
		t.Fatal(err)
	}
	if err := obs.Delete(ctx, bus.ObjectName(big.ID, big.Data)); err != nil {
		t.Fatal(err)
	}
	v := verifyStream(t, b, key, tlogbus.VerifyConfig{})
	only(t, v, tlog.FindPayloadMissing, 2, 2)

	v = verifyStream(t, b, key, tlogbus.VerifyConfig{AllowMissingPayloads: true})
	if !v.Intact {
		t.Fatalf("with AllowMissingPayloads:\n%s", explain(v))
	}
	var noted bool
	for _, f := range v.Findings {
		noted = noted || f.Kind == tlog.FindPayloadMissing && !f.Fails
	}
	if !noted {
		t.Fatalf("with AllowMissingPayloads, no note of the missing payload:\n%s", explain(v))
	}
}
