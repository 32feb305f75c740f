package bus_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/nats-io/nats.go/jetstream"
)

func TestCheckProvisioned(t *testing.T) {
	_, nc := bustest.Start(t)
	b, err := bus.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = b.CheckProvisioned(ctx)
	if !errors.Is(err, bus.ErrNotProvisioned) || !strings.Contains(err.Error(), "HOOKBUS_EVENTS") || !strings.Contains(err.Error(), "OBJ_hookbus_payloads") {
		t.Fatalf("CheckProvisioned on a bare server = %v", err)
	}
	if err := b.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.CheckProvisioned(ctx); err != nil {
		t.Fatalf("CheckProvisioned after Provision = %v", err)
	}
	if err := b.JetStream().DeleteStream(ctx, "HOOKBUS_DLQ"); err != nil {
		t.Fatal(err)
	}
	if err := b.CheckProvisioned(ctx); !errors.Is(err, bus.ErrNotProvisioned) || !strings.Contains(err.Error(), "missing HOOKBUS_DLQ") {
		t.Fatalf("CheckProvisioned with the DLQ gone = %v", err)
	}
	// The counters stream of a bus provisioned before it existed is
	// missing; once there, it is checked to count.
	if err := b.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.JetStream().DeleteStream(ctx, "HOOKBUS_COUNTERS"); err != nil {
		t.Fatal(err)
	}
	if err := b.CheckProvisioned(ctx); !errors.Is(err, bus.ErrNotProvisioned) || !strings.Contains(err.Error(), "missing HOOKBUS_COUNTERS") {
		t.Fatalf("CheckProvisioned with the counters gone = %v", err)
	}
	if _, err := b.JetStream().CreateStream(ctx, jetstream.StreamConfig{Name: "HOOKBUS_COUNTERS", Subjects: []string{"hookbus.cnt.>"}}); err != nil {
		t.Fatal(err)
	}
	if err := b.CheckProvisioned(ctx); !errors.Is(err, bus.ErrNotProvisioned) || !strings.Contains(err.Error(), "HOOKBUS_COUNTERS (without message counters)") {
		t.Fatalf("CheckProvisioned with a counters stream that does not count = %v", err)
	}
}

// A bus an older hookbus provisioned (buckets that allow roll-ups, an
// object store whose stream allows purges) is not provisioned until
// Provision runs again, which turns roll-ups off on the buckets the
// workers write and makes the payloads stream refuse purges, roll-ups and
// deletes, keeping its objects.
func TestOlderProvisioningIsProvisionedAgain(t *testing.T) {
	b, ctx := provisionedBus(t)
	js := b.JetStream()
	// As an older hookbus made them.
	if _, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: b.Names().Hooks, History: 5}); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteObjectStore(ctx, b.Names().Payloads); err != nil {
		t.Fatal(err)
	}
	obs, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: b.Names().Payloads})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := obs.PutBytes(ctx, "kept", []byte(`"an older object"`)); err != nil {
		t.Fatal(err)
	}
	err = b.CheckProvisioned(ctx)
	if !errors.Is(err, bus.ErrNotProvisioned) || !strings.Contains(err.Error(), "KV_hookbus_hooks (allows roll-ups") || !strings.Contains(err.Error(), "OBJ_hookbus_payloads (allows purges") {
		t.Fatalf("CheckProvisioned on an older provisioning = %v", err)
	}
	if err := b.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.CheckProvisioned(ctx); err != nil {
		t.Fatalf("CheckProvisioned after Provision = %v", err)
	}
	st, err := js.Stream(ctx, "OBJ_"+b.Names().Payloads)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := st.CachedInfo().Config; !cfg.DenyPurge || !cfg.DenyDelete || cfg.AllowRollup {
		t.Fatalf("payloads stream: deny purge %v, deny delete %v, roll-ups %v", cfg.DenyPurge, cfg.DenyDelete, cfg.AllowRollup)
	}
	if got, err := b.ClaimCheck().Get(ctx, "kept"); err != nil || string(got) != `"an older object"` {
		t.Fatalf("the older object after provisioning: %q, %v", got, err)
	}
}

// Every bucket is answered by its stream's leader: Provision turns direct
// gets off (a replica behind the leader answers those), a get of a key
// still works, and a bucket that allows them again is reported not
// provisioned until Provision turns them off once more.
func TestBucketsAreReadFromTheLeader(t *testing.T) {
	b, ctx := provisionedBus(t)
	js := b.JetStream()
	for name := range js.StreamNames(ctx).Name() {
		if !strings.HasPrefix(name, "KV_") {
			continue
		}
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if s.CachedInfo().Config.AllowDirect {
			t.Errorf("%s allows direct gets", name)
		}
	}
	kv, err := js.KeyValue(ctx, b.Names().Agents)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if e, err := kv.Get(ctx, "k"); err != nil || string(e.Value()) != "v" {
		t.Fatalf("get from the leader: %v, %v", e, err)
	}
	s, err := js.Stream(ctx, "KV_"+b.Names().Agents)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.AllowDirect = true
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := b.CheckProvisioned(ctx); !errors.Is(err, bus.ErrNotProvisioned) || !strings.Contains(err.Error(), "direct gets") {
		t.Fatalf("CheckProvisioned with direct gets = %v", err)
	}
	if err := b.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.CheckProvisioned(ctx); err != nil {
		t.Fatalf("CheckProvisioned after Provision = %v", err)
	}
}

// provisionedBus is a bus on an embedded server, provisioned, and a
// context for the test's requests.
func provisionedBus(t *testing.T) (*bus.Bus, context.Context) {
	t.Helper()
	_, nc := bustest.Start(t)
	b, err := bus.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	if err := b.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	return b, ctx
}
