package remote_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/nats-io/nats.go/jetstream"
)

// On a server without authentication (the embedded one), a connection is
// anonymous; the kill switch records it so, with the name given kept as a
// note, and enabling records who did in the delete marker.
func TestWhoAmIAndTheKillSwitchRecord(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	me, err := b.WhoAmI(ctx)
	if err != nil || me.User != events.IdentityAnonymous || me.Via != "nats" {
		t.Fatalf("WhoAmI = %+v, %v", me, err)
	}
	r := remote.NewRegistry(b)
	if err := r.Disable(ctx, "pii", disabledBy("alice")); err != nil {
		t.Fatal(err)
	}
	d, err := r.DisabledPlugins(ctx)
	if err != nil || d["pii"].By != events.IdentityAnonymous || d["pii"].DeclaredBy != "alice" || d["pii"].Channel != events.ChannelNATS {
		t.Fatalf("disabled: %+v, %v", d, err)
	}
	if err := r.Enable(ctx, "pii", events.Actor{Channel: events.ChannelCLI, DeclaredBy: "bob"}); err != nil {
		t.Fatal(err)
	}
	kv, err := b.JetStream().KeyValue(ctx, b.Names().Trust)
	if err != nil {
		t.Fatal(err)
	}
	hist, err := kv.History(ctx, remote.DisabledKey("pii"))
	if err != nil || len(hist) != 2 || hist[1].Operation() != jetstream.KeyValueDelete {
		t.Fatalf("history of the kill switch: %v, %v", hist, err)
	}
	var en remote.Enabled
	if err := json.Unmarshal(hist[1].Value(), &en); err != nil || en.By != events.IdentityAnonymous || en.DeclaredBy != "bob" || en.Channel != events.ChannelCLI {
		t.Fatalf("who enabled it: %s (%v)", hist[1].Value(), err)
	}
	if d, err := r.DisabledPlugins(ctx); err != nil || len(d) != 0 {
		t.Fatalf("after enable: %v, %v", d, err)
	}
}

func disabledBy(name string) interceptors.Disabled {
	return interceptors.Disabled{Reason: "leaks", Actor: events.Actor{DeclaredBy: name}}
}

// The kill switch is in the trust bucket: Provision moves the disabled.*
// entries an older hookbus kept in the registry bucket (which the workers
// write) there, and a loop ignores one left in the registry.
func TestKillSwitchMovedToTheTrustBucket(t *testing.T) {
	srv, nc := bustest.Start(t)
	b := bustest.Provision(t, nc)
	ctx := context.Background()
	hooks, err := b.JetStream().KeyValue(ctx, b.Names().Hooks)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hooks.Put(ctx, remote.DisabledKey("pii"), []byte(`{"by":"alice","reason":"leaks"}`)); err != nil {
		t.Fatal(err)
	}
	r := remote.NewRegistry(b)
	if d, err := r.DisabledPlugins(ctx); err != nil || len(d) != 0 {
		t.Fatalf("before provisioning again: %v, %v (an entry in the registry bucket is not the kill switch)", d, err)
	}
	bustest.Provision(t, bustest.Conn(t, srv))
	if _, err := hooks.Get(ctx, remote.DisabledKey("pii")); err == nil {
		t.Error("the entry is still in the registry bucket")
	}
	d, err := r.DisabledPlugins(ctx)
	if err != nil || d["pii"].Reason != "leaks" || d["pii"].By != "alice" {
		t.Fatalf("after provisioning again: %+v, %v", d, err)
	}
}
