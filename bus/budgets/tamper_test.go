package budgets_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/budgets"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// What a budget used cannot be taken back by writing its use entry: a
// writer of the budgets bucket that sets use.<agent> to zero, deletes it,
// or sends a roll-up, leaves the budget used up, because what it used is
// counted from the usage stream's records, and that stream refuses
// roll-ups, purges and deletes.
func TestUseCannotBeReset(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := context.Background()
	sb := budgets.New(b)
	if err := sb.SetLimit(ctx, budgets.Limit{Agent: "demo", Period: 24 * time.Hour, Tokens: 100}); err != nil {
		t.Fatal(err)
	}
	if over, err := sb.Reserve(ctx, "demo", "s", "r1"); err != nil || over != "" {
		t.Fatalf("first step: %q, %v", over, err)
	}
	if err := sb.Charge(ctx, "demo", "s", "r1", events.Usage{InputTokens: 80, OutputTokens: 40}); err != nil {
		t.Fatal(err)
	}
	refused := func(when string) {
		t.Helper()
		// A fresh Budgets (another worker) reads everything from the server.
		over, err := budgets.New(b).Reserve(ctx, "demo", "s", "r2")
		if err != nil || !strings.Contains(over, "tokens used 120 of 100") {
			t.Fatalf("%s: Reserve = %q, %v; want the budget used up", when, over, err)
		}
	}
	refused("after the charge")

	js := b.JetStream()
	kv, err := js.KeyValue(ctx, b.Names().Budgets)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "use.demo", []byte(`{"agent":"demo","since":"2000-01-01T00:00:00Z","tokens":0,"cost_usd":0}`)); err != nil {
		t.Fatal(err)
	}
	refused("after use.demo was written with tokens 0")
	if err := kv.Delete(ctx, "use.demo"); err != nil {
		t.Fatal(err)
	}
	refused("after use.demo was deleted")

	for _, subj := range []string{"$KV." + b.Names().Budgets + ".use.demo", "hookbus.use.demo"} {
		m := nats.NewMsg(subj)
		m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupAll)
		m.Data = []byte(`{"tokens":0}`)
		if _, err := js.PublishMsg(ctx, m); err == nil || !strings.Contains(err.Error(), "rollup not permitted") {
			t.Errorf("roll-up on %s: %v, want it refused", subj, err)
		}
	}
	// A record of a negative amount counts for nothing.
	if _, err := js.Publish(ctx, "hookbus.use.demo", []byte(`{"tokens":-1000,"cost_usd":-5}`)); err != nil {
		t.Fatal(err)
	}
	refused("after a negative record")
	st, err := js.Stream(ctx, b.Names().Usage)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(ctx); err == nil {
		t.Error("the usage stream was purged")
	}
	if err := st.DeleteMsg(ctx, 1); err == nil {
		t.Error("a usage record was deleted")
	}
	refused("after the purge and delete were refused")
}

// The limits are in the trust bucket, and Provision moves the limit.*
// keys an older hookbus kept in the budgets bucket there.
func TestLimitsMovedToTheTrustBucket(t *testing.T) {
	srv, nc := bustest.Start(t)
	b := bustest.Provision(t, nc)
	ctx := context.Background()
	js := b.JetStream()
	old, err := js.KeyValue(ctx, b.Names().Budgets)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Put(ctx, "limit.demo", []byte(`{"agent":"demo","period":"1h0m0s","tokens":10}`)); err != nil {
		t.Fatal(err)
	}
	bustest.Provision(t, bustest.Conn(t, srv))
	if _, err := old.Get(ctx, "limit.demo"); err == nil {
		t.Error("limit.demo is still in the budgets bucket")
	}
	l, ok, err := budgets.New(b).Limit(ctx, "demo")
	if err != nil || !ok || l.Tokens != 10 || l.Period != time.Hour {
		t.Fatalf("Limit after the move = %+v, %v, %v", l, ok, err)
	}
	trust, err := js.KeyValue(ctx, b.Names().Trust)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := trust.Get(ctx, "limit.demo"); err != nil {
		t.Fatalf("limit.demo in the trust bucket: %v", err)
	}
}
