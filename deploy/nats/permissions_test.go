package natsconf_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
)

// single is single.conf (with accounts.conf) running in-process, its
// streams and buckets provisioned by the admin user with bus.Provision.
type single struct {
	s    *server.Server
	opts *server.Options
}

func startSingle(t *testing.T) single {
	t.Helper()
	opts := confOptions(t, "single.conf")
	s := startServer(t, opts)
	admin, _ := connect(t, s, opts, "admin")
	b, err := bus.New(admin)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := b.Provision(ctx); err != nil {
		t.Fatalf("provision as admin: %v", err)
	}
	noErrors(t, admin)
	return single{s: s, opts: opts}
}

func (f single) connect(t *testing.T, user string) (*nats.Conn, asyncErrors) {
	t.Helper()
	return connect(t, f.s, f.opts, user)
}

// serve adds a micro service for plugin on nc, the way a hookbus plugin is
// served: service name and queue group are the plugin's name, one endpoint
// per stage subject; every request is answered with an allow decision that
// names the plugin.
func serve(t *testing.T, nc *nats.Conn, plugin string, stages ...string) {
	t.Helper()
	svc, err := micro.AddService(nc, micro.Config{Name: plugin, Version: "0.1.0", QueueGroup: plugin})
	if err != nil {
		t.Fatalf("add service %s: %v", plugin, err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	for _, stage := range stages {
		name := strings.ReplaceAll(stage, ".", "-")
		err := svc.AddEndpoint(name, micro.HandlerFunc(func(r micro.Request) {
			_ = r.RespondJSON(map[string]string{"decision": "allow", "reason": plugin})
		}), micro.WithEndpointSubject("hookbus.hook."+stage+"."+plugin))
		if err != nil {
			t.Fatalf("add endpoint %s: %v", stage, err)
		}
	}
	// The subscriptions reach the server before any request is sent.
	if err := nc.Flush(); err != nil {
		t.Fatalf("flush %s: %v", plugin, err)
	}
}

// intercept sends an interception request as nc and returns the reason
// of the decision (the answering plugin).
func intercept(t *testing.T, nc *nats.Conn, subject string) string {
	t.Helper()
	msg, err := nc.Request(subject, []byte(`{}`), wait)
	if err != nil {
		t.Fatalf("request %s: %v", subject, err)
	}
	var d struct{ Decision, Reason string }
	if err := json.Unmarshal(msg.Data, &d); err != nil || d.Decision != "allow" {
		t.Fatalf("request %s: reply %q: %v", subject, msg.Data, err)
	}
	return d.Reason
}

func TestAnonymousAndWrongPasswordRefused(t *testing.T) {
	opts := confOptions(t, "single.conf")
	s := startServer(t, opts)
	if nc, err := nats.Connect(s.ClientURL()); err == nil {
		nc.Close()
		t.Fatal("connected without credentials")
	} else if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("no credentials: %v, want an authorization violation", err)
	}
	if nc, err := nats.Connect(s.ClientURL(), nats.UserInfo("loop", "wrong")); err == nil {
		nc.Close()
		t.Fatal("connected with a wrong password")
	}
}

// TestPluginServesItsOwnStage: an unprivileged plugin served as a micro
// service (queue group = its name) on its own tool.before subject answers
// the loop, and its $SRV discovery answers too, with no permission error on
// its connection.
func TestPluginServesItsOwnStage(t *testing.T) {
	f := startSingle(t)
	pii, piiErrs := f.connect(t, "plugin-pii")
	loop, _ := f.connect(t, "loop")
	serve(t, pii, "plugin-pii", "tool.before", "tool.after", "stop")
	discoveryRefused(t, piiErrs)

	for _, subj := range []string{
		"hookbus.hook.tool.before.plugin-pii",
		"hookbus.hook.tool.after.plugin-pii",
		"hookbus.hook.stop.plugin-pii",
	} {
		if got := intercept(t, loop, subj); got != "plugin-pii" {
			t.Errorf("%s answered by %q", subj, got)
		}
	}

	msg, err := loop.Request("$SRV.INFO.plugin-pii", nil, wait)
	if err != nil {
		t.Fatalf("$SRV.INFO as loop: %v", err)
	}
	var info micro.Info
	if err := json.Unmarshal(msg.Data, &info); err != nil {
		t.Fatal(err)
	}
	if info.Name != "plugin-pii" || len(info.Endpoints) != 3 {
		t.Fatalf("service info = %+v", info)
	}
	for _, e := range info.Endpoints {
		if e.QueueGroup != "plugin-pii" {
			t.Errorf("endpoint %s queue group %q", e.Name, e.QueueGroup)
		}
	}
	select {
	case err := <-piiErrs:
		t.Fatalf("plugin-pii: unexpected server error: %v", err)
	default:
	}
	noErrors(t, loop)
}

// discoveryRefused takes the refusals of a plugin's subscriptions to the
// unnamed $SRV.PING, $SRV.INFO and $SRV.STATS (micro subscribes to them;
// deploy/nats lets a plugin answer only its own $SRV subjects), and fails
// on any other error.
func discoveryRefused(t *testing.T, errs asyncErrors) {
	t.Helper()
	want := map[string]bool{}
	for _, verb := range []string{"PING", "INFO", "STATS"} {
		want[fmt.Sprintf("Permissions Violation for Subscription to %q", "$SRV."+verb)] = true
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for len(want) > 0 {
		select {
		case err := <-errs:
			found := false
			for w := range want {
				if strings.Contains(err.Error(), w) {
					delete(want, w)
					found = true
				}
			}
			if !found {
				t.Fatalf("unexpected server error: %v", err)
			}
		case <-timer.C:
			t.Fatalf("discovery refusals not seen within %v: %v", wait, want)
		}
	}
}

// A plugin may answer only its own $SRV subjects: plugin-pii cannot
// subscribe to plugin-policy's, so it cannot forge plugin-policy's service
// description; plugin-policy's own answers reach the loop.
func TestPluginCannotAnswerAnotherPluginsDiscovery(t *testing.T) {
	f := startSingle(t)
	pii, piiErrs := f.connect(t, "plugin-pii")
	policy, _ := f.connect(t, "plugin-policy")
	loop, _ := f.connect(t, "loop")
	for _, subj := range []string{"$SRV.INFO.plugin-policy", "$SRV.PING.plugin-policy", "$SRV.STATS.plugin-policy", "$SRV.INFO"} {
		if _, err := pii.Subscribe(subj, func(m *nats.Msg) { _ = m.Respond([]byte(`{"name":"plugin-policy","forged":true}`)) }); err != nil {
			t.Fatal(err)
		}
		if err := pii.FlushTimeout(wait); err != nil {
			t.Fatal(err)
		}
		piiErrs.wantViolation(t, "Subscription to", subj)
	}
	serve(t, policy, "plugin-policy", "tool.before")
	if err := policy.FlushTimeout(wait); err != nil {
		t.Fatal(err)
	}
	msg, err := loop.Request("$SRV.INFO.plugin-policy", nil, wait)
	if err != nil {
		t.Fatalf("$SRV.INFO.plugin-policy as loop: %v", err)
	}
	var info micro.Info
	if err := json.Unmarshal(msg.Data, &info); err != nil || info.Name != "plugin-policy" || len(info.Endpoints) != 1 {
		t.Fatalf("plugin-policy's info = %s (%v)", msg.Data, err)
	}
}

// TestUnprivilegedPluginCannotTakePrivilegedStage: the server refuses the
// unprivileged plugin's subscription to a privileged stage (a permissions
// violation reported on the connection), so the loop's request finds no
// responder; the same holds for another plugin's subject, for its own
// subject outside its queue group, and for wildcards over other plugins or
// the reply inboxes.
func TestUnprivilegedPluginCannotTakePrivilegedStage(t *testing.T) {
	f := startSingle(t)
	pii, errs := f.connect(t, "plugin-pii")
	loop, _ := f.connect(t, "loop")

	refused := []struct{ subject, queue string }{
		{"hookbus.hook.context.assembled.plugin-pii", "plugin-pii"},
		{"hookbus.hook.model.responded.plugin-pii", "plugin-pii"},
		{"hookbus.hook.tool.before.plugin-policy", "plugin-policy"}, // another plugin's
		{"hookbus.hook.tool.before.plugin-policy", "plugin-pii"},
		{"hookbus.hook.tool.before.plugin-pii", ""},      // own subject, no queue group
		{"hookbus.hook.tool.before.plugin-pii", "other"}, // own subject, wrong queue group
		{"hookbus.hook.>", "plugin-pii"},
		{"hookbus.hook.*.*.*", "plugin-pii"},
		{"hookbus.evt.>", ""},
		{"_INBOX.>", ""},
	}
	for _, r := range refused {
		var err error
		if r.queue == "" {
			_, err = pii.Subscribe(r.subject, func(*nats.Msg) {})
		} else {
			_, err = pii.QueueSubscribe(r.subject, r.queue, func(*nats.Msg) {})
		}
		if err != nil {
			t.Fatalf("subscribe %s: %v", r.subject, err)
		}
		errs.wantViolation(t, "Subscription to", r.subject)
	}

	for _, subj := range []string{
		"hookbus.hook.context.assembled.plugin-pii",
		"hookbus.hook.model.responded.plugin-pii",
	} {
		if _, err := loop.Request(subj, []byte(`{}`), wait); !errors.Is(err, nats.ErrNoResponders) {
			t.Errorf("request %s: %v, want no responders", subj, err)
		}
	}
}

// TestWildcardSubscriptionDropsPrivilegedStages: a queue subscription to
// hookbus.hook.*.*.plugin-pii is allowed (it matches the plugin's own
// two-token stages), but the server's deny list filters deliveries: a
// privileged stage's message is dropped. The loop publishes the privileged
// message first and a tool.before one second; one publisher's messages
// reach one subscription in order, so if the first were delivered it would
// arrive before the second.
func TestWildcardSubscriptionDropsPrivilegedStages(t *testing.T) {
	f := startSingle(t)
	pii, _ := f.connect(t, "plugin-pii")
	loop, _ := f.connect(t, "loop")

	got := make(chan string, 8)
	if _, err := pii.QueueSubscribe("hookbus.hook.*.*.plugin-pii", "plugin-pii", func(m *nats.Msg) {
		got <- m.Subject
	}); err != nil {
		t.Fatal(err)
	}
	noErrors(t, pii) // the subscription itself is allowed

	for _, subj := range []string{
		"hookbus.hook.context.assembled.plugin-pii",
		"hookbus.hook.model.responded.plugin-pii",
		"hookbus.hook.tool.before.plugin-pii",
	} {
		if err := loop.Publish(subj, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	noErrors(t, loop)
	select {
	case subj := <-got:
		if subj != "hookbus.hook.tool.before.plugin-pii" {
			t.Fatalf("the unprivileged plugin received %s", subj)
		}
	case <-timeAfter(t):
		t.Fatal("tool.before not delivered")
	}
	if len(got) != 0 {
		t.Fatalf("more deliveries: %s", <-got)
	}
}

// TestPrivilegedPluginServesPrivilegedStages: the privileged plugin's user
// may serve context.assembled and model.responded (and ordinary stages).
func TestPrivilegedPluginServesPrivilegedStages(t *testing.T) {
	f := startSingle(t)
	policy, policyErrs := f.connect(t, "plugin-policy")
	loop, _ := f.connect(t, "loop")
	serve(t, policy, "plugin-policy", "context.assembled", "model.responded", "tool.before", "intake")
	discoveryRefused(t, policyErrs)
	for _, subj := range []string{
		"hookbus.hook.context.assembled.plugin-policy",
		"hookbus.hook.model.responded.plugin-policy",
		"hookbus.hook.tool.before.plugin-policy",
		"hookbus.hook.intake.plugin-policy",
	} {
		if got := intercept(t, loop, subj); got != "plugin-policy" {
			t.Errorf("%s answered by %q", subj, got)
		}
	}
	select {
	case err := <-policyErrs:
		t.Fatalf("plugin-policy: unexpected server error: %v", err)
	default:
	}
}

// TestPluginPublishesOnlyReplies: a plugin may not publish events or run
// requests, call another plugin, touch the registry or trust buckets or the
// JetStream API; the admin then sees no trace of any of it.
func TestPluginPublishesOnlyReplies(t *testing.T) {
	f := startSingle(t)
	for _, user := range []string{"plugin-pii", "plugin-policy"} {
		nc, errs := f.connect(t, user)
		for _, subj := range []string{
			"hookbus.evt.agent1.session1.intake",
			"hookbus.evt.agent1.session1.hook.decided",
			"hookbus.run.agent1",
			"hookbus.dlq.billing",
			"hookbus.hook.tool.before.plugin-other",
			"$KV.hookbus_hooks." + user,
			"$KV.hookbus_trust." + user,
			"$O.hookbus_payloads.M.x",
			"$JS.API.STREAM.INFO.KV_hookbus_hooks",
			"$JS.API.STREAM.CREATE.EVIL",
			"_INBOX.somebody.else",
		} {
			denyPublish(t, nc, errs, subj)
		}
	}

	admin, _ := f.connect(t, "admin")
	js := jetStream(t, admin)
	ctx := testContext(t)
	for _, bucket := range []string{"hookbus_hooks", "hookbus_trust"} {
		kv, err := js.KeyValue(ctx, bucket)
		if err != nil {
			t.Fatal(err)
		}
		st, err := kv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Values() != 0 {
			t.Errorf("bucket %s holds %d values", bucket, st.Values())
		}
	}
	for _, stream := range []string{"HOOKBUS_EVENTS", "HOOKBUS_RUNS", "HOOKBUS_DLQ"} {
		if n := streamMsgs(t, js, stream); n != 0 {
			t.Errorf("%s holds %d messages", stream, n)
		}
	}
}

// TestEventRoundTripLoopToAuditor: the loop user publishes an event with
// bus.PublishSync (write-ahead, acked by HOOKBUS_EVENTS) and the auditor
// reads it back with an ordered consumer and a message get, decoding the
// CloudEvent.
func TestEventRoundTripLoopToAuditor(t *testing.T) {
	f := startSingle(t)
	loop, _ := f.connect(t, "loop")
	auditor, _ := f.connect(t, "auditor")
	ctx := testContext(t)

	b, err := bus.New(loop)
	if err != nil {
		t.Fatal(err)
	}
	e, err := events.New(events.StageIntake, events.Meta{
		Source: "natsconf-test", AgentID: "agent1", SessionID: "session1", RunID: "run1",
	}, events.Intake{Prompt: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.PublishSync(ctx, e); err != nil {
		t.Fatalf("publish as loop: %v", err)
	}
	noErrors(t, loop)

	js := jetStream(t, auditor)
	for _, filter := range [][]string{nil, {"hookbus.evt.agent1.session1.>"}} {
		got := readOrdered(t, js, "HOOKBUS_EVENTS", filter)
		if got.ID != e.ID || got.Stage != events.StageIntake || got.SessionID != "session1" {
			t.Fatalf("auditor read %+v, want event %s", got, e.ID)
		}
	}
	stream, err := js.Stream(ctx, "HOOKBUS_EVENTS")
	if err != nil {
		t.Fatalf("stream info as auditor: %v", err)
	}
	raw, err := stream.GetMsg(ctx, 1)
	if err != nil {
		t.Fatalf("get message as auditor: %v", err)
	}
	if got, err := events.Decode(events.Header(raw.Header), raw.Data); err != nil || got.ID != e.ID {
		t.Fatalf("message 1 = %v, %v; want event %s", got, err, e.ID)
	}

	// An explicit-ack pull consumer (a replay cursor): info, list, ack.
	cons, err := stream.CreateConsumer(ctx, jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatalf("pull consumer as auditor: %v", err)
	}
	if _, err := cons.Info(ctx); err != nil {
		t.Fatalf("consumer info as auditor: %v", err)
	}
	names := stream.ConsumerNames(ctx)
	var listed []string
	for name := range names.Name() {
		listed = append(listed, name)
	}
	if err := names.Err(); err != nil || !slices.Contains(listed, cons.CachedInfo().Name) {
		t.Fatalf("consumer names as auditor: %v, %v", listed, err)
	}
	m, err := cons.Next(jetstream.FetchMaxWait(wait))
	if err != nil {
		t.Fatalf("pull as auditor: %v", err)
	}
	if err := m.DoubleAck(ctx); err != nil {
		t.Fatalf("ack as auditor: %v", err)
	}
	noErrors(t, auditor)
}

// TestAuditorReadsLargePayloads: an event's large payload (claim check in
// hookbus_payloads), stored by the loop, is readable by the auditor.
func TestAuditorReadsLargePayloads(t *testing.T) {
	f := startSingle(t)
	loop, _ := f.connect(t, "loop")
	auditor, _ := f.connect(t, "auditor")
	ctx := testContext(t)

	lb, err := bus.New(loop)
	if err != nil {
		t.Fatal(err)
	}
	payload := largePayload()
	if err := lb.ClaimCheck().PutData(ctx, "01JPAYLOAD", payload, jetstream.ObjectMeta{Name: "01JPAYLOAD"}); err != nil {
		t.Fatalf("object put as loop: %v", err)
	}
	aobs, err := jetStream(t, auditor).ObjectStore(ctx, "hookbus_payloads")
	if err != nil {
		t.Fatalf("object store as auditor: %v", err)
	}
	got, err := aobs.GetBytes(ctx, "01JPAYLOAD")
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("object get as auditor: %d bytes, %v", len(got), err)
	}
	noErrors(t, auditor)
}

// TestAuditorPublishesNothing: the auditor cannot publish under hookbus.>
// nor change the event stream, nor touch the run queue's consumers; the
// stream keeps its one event.
func TestAuditorPublishesNothing(t *testing.T) {
	f := startSingle(t)
	loop, _ := f.connect(t, "loop")
	if _, err := jetStream(t, loop).Publish(testContext(t), "hookbus.evt.agent1.session1.intake", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}

	auditor, errs := f.connect(t, "auditor")
	for _, subj := range []string{
		"hookbus.evt.agent1.session1.intake",
		"hookbus.run.agent1",
		"hookbus.dlq.billing",
		"hookbus.hook.tool.before.plugin-pii",
		"$KV.hookbus_hooks.plugin-pii",
		"$KV.hookbus_trust.plugin-pii",
		"$O.hookbus_payloads.M.x",
		"$JS.API.STREAM.DELETE.HOOKBUS_EVENTS",
		"$JS.API.STREAM.PURGE.HOOKBUS_EVENTS",
		"$JS.API.STREAM.UPDATE.HOOKBUS_EVENTS",
		"$JS.API.STREAM.MSG.DELETE.HOOKBUS_EVENTS",
		"$JS.API.CONSUMER.DELETE.HOOKBUS_RUNS.workers",
		"$JS.API.CONSUMER.CREATE.HOOKBUS_RUNS.thief",
		"$JS.API.STREAM.CREATE.EVIL",
	} {
		denyPublish(t, auditor, errs, subj)
	}
	if _, err := auditor.Subscribe("hookbus.>", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	errs.wantViolation(t, "Subscription to", "hookbus.>")

	admin, _ := f.connect(t, "admin")
	if n := streamMsgs(t, jetStream(t, admin), "HOOKBUS_EVENTS"); n != 1 {
		t.Fatalf("HOOKBUS_EVENTS holds %d messages, want 1", n)
	}
}
