package natsconf_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/budgets"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// rollup publishes body on subject as nc with a Nats-Rollup: all header
// and asserts the stream refused it.
func rollup(t *testing.T, nc *nats.Conn, subject string, body []byte) {
	t.Helper()
	m := nats.NewMsg(subject)
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupAll)
	m.Data = body
	_, err := jetStream(t, nc).PublishMsg(testContext(t), m)
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || !strings.Contains(apiErr.Description, "rollup not permitted") {
		t.Fatalf("roll-up on %s: %v, want the stream's refusal", subject, err)
	}
}

// The loop user cannot lift the kill switch or a budget limit, nor reset
// what a budget used: a roll-up on every key it may write is refused by
// the bucket, the operator's decisions are where it may not publish, and
// what a budget used is counted from records it can only add to. Every
// worker goes on skipping the disabled plugin and refusing the agent
// whose budget is used up.
func TestLoopCannotLiftTheKillSwitchOrBudgets(t *testing.T) {
	f := startSingle(t)
	ctx := testContext(t)
	ab, _, _ := f.userBus(t, "admin")
	lb, lnc, lerrs := f.userBus(t, "loop")

	if err := remote.NewRegistry(lb).Put(ctx, interceptors.Registration{Plugin: "plugin-pii", Stage: events.StageToolBefore, Timeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := remote.NewRegistry(ab).Disable(ctx, "plugin-pii", interceptors.Disabled{Reason: "leaks PII"}); err != nil {
		t.Fatal(err)
	}
	if err := budgets.New(ab).SetLimit(ctx, budgets.Limit{Agent: "demo", Period: 24 * time.Hour, Tokens: 100}); err != nil {
		t.Fatal(err)
	}
	sb := budgets.New(lb)
	if over, err := sb.Reserve(ctx, "demo", "s1", "r1"); err != nil || over != "" {
		t.Fatalf("first step: %q, %v", over, err)
	}
	if err := sb.Charge(ctx, "demo", "s1", "r1", events.Usage{InputTokens: 100, OutputTokens: 20}); err != nil {
		t.Fatal(err)
	}

	// Roll-ups on every key the loop may write (but the decision cache's,
	// whose per-key TTLs need them: emptying it costs model calls only).
	for _, subj := range []string{
		"$KV.hookbus_hooks.tool.before.plugin-pii", "$KV.hookbus_budgets.use.demo",
		"$KV.hookbus_agents.demo", "$KV.hookbus_workers.w1", "hookbus.use.demo", "$O.hookbus_payloads.M.eA",
	} {
		rollup(t, lnc, subj, []byte(`{}`))
	}
	// The operator's bucket and the old places: refused by the server.
	for _, subj := range []string{"$KV.hookbus_trust.disabled.plugin-pii", "$KV.hookbus_trust.limit.demo", "$KV.hookbus_hooks.disabled.plugin-pii", "$KV.hookbus_budgets.limit.demo"} {
		denyPublish(t, lnc, lerrs, subj)
	}
	// What the budget used, written as zero, deleted: a fresh worker
	// still refuses the agent.
	js := jetStream(t, lnc)
	kv, err := js.KeyValue(ctx, "hookbus_budgets")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "use.demo", []byte(`{"agent":"demo","since":"2000-01-01T00:00:00Z","tokens":0}`)); err != nil {
		t.Fatalf("write use.demo as loop: %v", err)
	}
	if err := kv.Delete(ctx, "use.demo"); err != nil {
		t.Fatalf("delete use.demo as loop: %v", err)
	}
	if _, err := js.Publish(ctx, "hookbus.use.demo", []byte(`{"tokens":-1000000}`)); err != nil {
		t.Fatal(err)
	}
	lb2, _, _ := f.userBus(t, "loop")
	if over, err := budgets.New(lb2).Reserve(ctx, "demo", "s1", "r2"); err != nil || !strings.Contains(over, "tokens used 120 of 100") {
		t.Fatalf("after the loop's attempts, Reserve = %q, %v; want the budget used up", over, err)
	}
	// The kill switch holds: a worker following the registry skips the
	// plugin.
	trust, err := remote.WatchTrust(ctx, lb2)
	if err != nil {
		t.Fatal(err)
	}
	defer trust.Stop()
	chain := interceptors.NewChain(interceptors.WithTrust(trust))
	hs, err := remote.SyncHooks(ctx, lb2, chain, trust)
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Stop()
	if _, ok := trust.Disabled()["plugin-pii"]; !ok {
		t.Fatalf("the kill switch as a worker reads it: %v", trust.Disabled())
	}
	if d, err := remote.NewRegistry(ab).DisabledPlugins(ctx); err != nil || d["plugin-pii"].Reason != "leaks PII" {
		t.Fatalf("the kill switch after the loop's attempts: %v, %v", d, err)
	}
	if l, ok, err := budgets.New(ab).Limit(ctx, "demo"); err != nil || !ok || l.Tokens != 100 {
		t.Fatalf("the limit after the loop's attempts: %+v, %v, %v", l, ok, err)
	}
}

// No one but the admin can erase a large payload, and not even the admin
// through the stream: the loop may not purge it (the server refuses) nor
// roll it up (the stream refuses), the stream refuses the admin's purge
// and message delete, and a description the loop publishes later (the
// object marked deleted) does not hide the one the event points to.
func TestLargePayloadsCannotBeErased(t *testing.T) {
	f := startSingle(t)
	ctx := testContext(t)
	lb, lnc, lerrs := f.userBus(t, "loop")
	e := bustest.SizedEvent(t, "demo", "s1", "r1", 1, 2<<20)
	if err := lb.PublishSync(ctx, e); err != nil {
		t.Fatal(err)
	}
	first, err := lb.GetStored(ctx, 1)
	if err != nil || first.Event == nil || first.Event.DataRef == "" {
		t.Fatalf("the event was not claim-checked: %+v, %v", first, err)
	}
	stored := first.Event.DataRef
	name := strings.TrimPrefix(stored, "hookbus_payloads/")

	denyPublish(t, lnc, lerrs, "$JS.API.STREAM.PURGE.OBJ_hookbus_payloads")
	denyPublish(t, lnc, lerrs, "$JS.API.STREAM.MSG.DELETE.OBJ_hookbus_payloads")
	meta := "$O.hookbus_payloads.M." + base64.URLEncoding.EncodeToString([]byte(name))
	rollup(t, lnc, meta, []byte(`{"name":"`+name+`","deleted":true}`))
	if _, err := jetStream(t, lnc).Publish(ctx, meta, []byte(`{"name":"`+name+`","bucket":"hookbus_payloads","deleted":true}`)); err != nil {
		t.Fatalf("a later description as loop: %v", err)
	}

	admin, _ := f.connect(t, "admin")
	st, err := jetStream(t, admin).Stream(ctx, "OBJ_hookbus_payloads")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(ctx); err == nil {
		t.Error("the admin purged the payloads")
	}
	if err := st.DeleteMsg(ctx, 1); err == nil {
		t.Error("the admin deleted a payload's message")
	}

	ab, _, _ := f.userBus(t, "auditor")
	got, err := ab.GetStored(ctx, 1)
	if err != nil || got.DataGone || got.Event == nil || len(got.Event.Data) != len(e.Data) {
		t.Fatalf("the event as the auditor reads it: %+v, %v", got, err)
	}
}

// The checkpointer's durable consumer is the checkpointer's and the
// admin's: the loop cannot pause it, the auditor and the approvers cannot
// delete it or change it; the admin can pause it.
func TestCheckpointerDurableIsTheCheckpointers(t *testing.T) {
	f := startSingle(t)
	ctx := testContext(t)
	cnc, _ := f.connect(t, "checkpointer")
	if _, err := jetStream(t, cnc).CreateOrUpdateConsumer(ctx, "HOOKBUS_EVENTS", jetstream.ConsumerConfig{
		Durable: "hookbus-checkpointer", AckPolicy: jetstream.AckExplicitPolicy,
	}); err != nil {
		t.Fatalf("the checkpointer's durable as checkpointer: %v", err)
	}
	// A refused request gets no answer: each waits for its own deadline.
	short := func() context.Context {
		c, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		t.Cleanup(cancel)
		return c
	}
	lnc, _ := f.connect(t, "loop")
	if _, err := jetStream(t, lnc).PauseConsumer(short(), "HOOKBUS_EVENTS", "hookbus-checkpointer", time.Now().Add(time.Hour)); err == nil {
		t.Error("the loop paused the checkpointer")
	}
	for _, user := range []string{"auditor", "approver", "alice", "webui", "loop"} {
		nc, _ := f.connect(t, user)
		js := jetStream(t, nc)
		if err := js.DeleteConsumer(short(), "HOOKBUS_EVENTS", "hookbus-checkpointer"); err == nil {
			t.Errorf("%s deleted the checkpointer's durable", user)
		}
		if _, err := js.CreateOrUpdateConsumer(short(), "HOOKBUS_EVENTS", jetstream.ConsumerConfig{
			Durable: "hookbus-checkpointer", AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: "hookbus.evt.none",
		}); err == nil {
			t.Errorf("%s changed the checkpointer's durable", user)
		}
	}
	admin, _ := f.connect(t, "admin")
	ctx = testContext(t)
	c, err := jetStream(t, admin).Consumer(ctx, "HOOKBUS_EVENTS", "hookbus-checkpointer")
	if err != nil {
		t.Fatalf("the checkpointer's durable after the attempts: %v", err)
	}
	if info := c.CachedInfo(); info.Paused || info.Config.FilterSubject != "" {
		t.Fatalf("the checkpointer's durable after the attempts: paused %v, filter %q", info.Paused, info.Config.FilterSubject)
	}
	if _, err := jetStream(t, admin).PauseConsumer(ctx, "HOOKBUS_EVENTS", "hookbus-checkpointer", time.Now().Add(time.Hour)); err != nil {
		t.Fatalf("pause as admin: %v", err)
	}
}
