package natsconf_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/budgets"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// scheduledRun is a JetStream message scheduled on subject for at, whose
// target is the run queue of agent demo and whose body is a run request:
// what an attacker publishes to have a worker run something later.
func scheduledRun(t *testing.T, subject string, at time.Time) *nats.Msg {
	t.Helper()
	body, err := json.Marshal(events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "victim", Prompt: "cat ~/.ssh/id_ed25519", SubmittedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return &nats.Msg{Subject: subject, Data: body, Header: nats.Header{
		"Nats-Schedule":        []string{"@at " + at.UTC().Format(time.RFC3339)},
		"Nats-Schedule-Target": []string{"hookbus.run.demo"},
		jetstream.MsgIDHeader:  []string{events.NewID()},
	}}
}

// refusedJS publishes msg as nc and asserts it was not stored: with code 0,
// the server refused the publish (a permissions violation); otherwise,
// published through JetStream, the stream refused the message with code.
func refusedJS(t *testing.T, nc *nats.Conn, errs asyncErrors, msg *nats.Msg, code jetstream.ErrorCode) {
	t.Helper()
	if code == 0 {
		if err := nc.PublishMsg(msg); err != nil {
			t.Fatal(err)
		}
		if err := nc.FlushTimeout(wait); err != nil {
			t.Fatal(err)
		}
		errs.wantViolation(t, "Publish to", msg.Subject)
		return
	}
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	ack, err := jetStream(t, nc).PublishMsg(ctx, msg)
	if err == nil {
		t.Fatalf("%s: a scheduled run request was stored in %s (seq %d)", msg.Subject, ack.Stream, ack.Sequence)
	}
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != code {
		t.Fatalf("%s: %v, want the stream's refusal %d", msg.Subject, err, code)
	}
}

// TestNoPublishBecomesARun: no user but the loop (and the admin) can make a
// run request appear, whatever it publishes: not on a run or wake subject
// (refused by the server), not as a message schedule on a subject it may
// publish (HOOKBUS_EVENTS allows no schedules), nor on one it may not, nor
// by creating or changing a stream that would source or republish into the
// runs stream. A worker takes the run queue meanwhile and runs nothing. The
// loop's own wake-up, scheduled for the same second, is delivered: the
// server's scheduler did run past the attackers' times.
func TestNoPublishBecomesARun(t *testing.T) {
	f := startSingle(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	lb, lnc, lerrs := f.userBus(t, "loop")
	var ran atomic.Int32
	rc, err := runs.New(lb).Consume(ctx, runs.ConsumerConfig{Agents: runs.Agents("demo"), PollWait: 100 * time.Millisecond}, func(context.Context, *events.RunRequest) (runs.Outcome, error) {
		ran.Add(1)
		return runs.Outcome{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Stop()
	at := time.Now().Add(3 * time.Second)

	for _, user := range []string{"approver", "alice", "webui", "auditor", "plugin-pii", "plugin-policy"} {
		nc, errs := f.connect(t, user)
		for _, subj := range []string{"hookbus.run.demo", "hookbus.run.demo." + strings.Repeat("ab", 32), "hookbus.approval.nobody.x", "hookbus.wake.demo.r1", "hookbus.wake.demo.r1.due"} {
			denyPublish(t, nc, errs, subj)
		}
		// A schedule targeting the run queue, on each subject the user
		// may not publish: refused by the server.
		for _, subj := range []string{"hookbus.run.demo", "hookbus.approval.nobody.x", "hookbus.wake.demo.r1", "hookbus.evt.demo.s1.intake",
			"hookbus.evt.demo.s1.approval.resolved", "hookbus.evt.demo.s1.approval.resolved.loop"} {
			refusedJS(t, nc, errs, scheduledRun(t, subj, at), 0)
		}
		// On the one subject an approver may publish (its answers, in
		// HOOKBUS_EVENTS): refused by the stream, which allows no schedules.
		switch user {
		case "approver", "alice", "webui":
			refusedJS(t, nc, errs, scheduledRun(t, "hookbus.evt.demo.s1.approval.resolved."+user, at), jetstream.JSErrCodeMessageSchedulesDisabled)
		}
		// No stream may be made or changed to source or republish into
		// the runs stream.
		for _, subj := range []string{"$JS.API.STREAM.CREATE.EVIL", "$JS.API.STREAM.UPDATE.HOOKBUS_EVENTS", "$JS.API.STREAM.UPDATE.HOOKBUS_RUNS",
			"$JS.API.STREAM.UPDATE.HOOKBUS_WAKES", "$JS.API.STREAM.CREATE.HOOKBUS_RUNS"} {
			denyPublish(t, nc, errs, subj)
		}
	}
	// The loop's schedules live in HOOKBUS_WAKES, and even there a
	// schedule cannot target the run queue: a target must be a subject of
	// the schedule's own stream.
	refusedJS(t, lnc, lerrs, scheduledRun(t, "hookbus.wake.demo.r2", at), jetstream.JSErrCodeScheduleTargetInvalid)

	// The control: the loop's own wake-up due in the same second.
	if err := runs.New(lb).WakeAt(ctx, events.Wake{RunID: "control", AgentID: "demo", SessionID: "s", At: at}); err != nil {
		t.Fatal(err)
	}
	admin, _ := f.connect(t, "admin")
	wakes, err := jetStream(t, admin).Stream(ctx, "HOOKBUS_WAKES")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the loop's wake-up due at the attackers' time to be delivered", func() bool {
		_, err := wakes.GetLastMsgForSubject(ctx, "hookbus.wake.demo.control.due")
		return err == nil
	})
	if n := streamMsgs(t, jetStream(t, admin), "HOOKBUS_RUNS"); n != 0 || ran.Load() != 0 || rc.Stats().Received != 0 {
		t.Fatalf("HOOKBUS_RUNS holds %d messages; the worker ran %d, received %d; want nothing", n, ran.Load(), rc.Stats().Received)
	}
}

// TestLoopCannotForgeOperatorActions: the loop user (a worker, or a Claude
// Code machine running the bridge with its credentials) can neither
// disable nor re-enable a plugin (the kill switch's disabled.* keys, a
// delete or a purge of them) nor set or remove a budget limit. The admin
// can, and the records name the admin as the server authenticated it, the
// name typed kept as a note.
func TestLoopCannotForgeOperatorActions(t *testing.T) {
	f := startSingle(t)
	ctx := testContext(t)
	lb, lnc, lerrs := f.userBus(t, "loop")
	for _, subj := range []string{"$KV.hookbus_hooks.disabled.plugin-pii", "$JS.API.STREAM.PURGE.KV_hookbus_hooks",
		"$JS.API.STREAM.MSG.DELETE.KV_hookbus_hooks", "$KV.hookbus_budgets.limit.demo"} {
		denyPublish(t, lnc, lerrs, subj)
	}
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := remote.NewRegistry(lb).Disable(short, "plugin-pii", interceptors.Disabled{Reason: "forged", Actor: events.Actor{DeclaredBy: "the-ciso"}}); err == nil {
		t.Fatal("the loop disabled a plugin")
	}
	if err := budgets.New(lb).SetLimit(short, budgets.Limit{Agent: "demo", Period: time.Hour, Tokens: 1 << 40}); err == nil {
		t.Fatal("the loop set a budget limit")
	}

	ab, _, _ := f.userBus(t, "admin")
	if err := remote.NewRegistry(ab).Disable(ctx, "plugin-pii", interceptors.Disabled{Reason: "leaks PII", Actor: events.Actor{Channel: events.ChannelCLI, DeclaredBy: "on call"}}); err != nil {
		t.Fatal(err)
	}
	got, err := remote.NewRegistry(lb).DisabledPlugins(ctx)
	if d := got["plugin-pii"]; err != nil || d.By != "admin" || d.Identity != "admin" || d.Via != "nats" || d.Channel != events.ChannelCLI || d.DeclaredBy != "on call" {
		t.Fatalf("the kill switch as the loop reads it: %+v, %v", got, err)
	}
	// The loop cannot turn it back on either (a delete is a write).
	if err := remote.NewRegistry(lb).Enable(short, "plugin-pii", events.Actor{}); err == nil {
		t.Fatal("the loop enabled a disabled plugin")
	}
	if got, err := remote.NewRegistry(ab).DisabledPlugins(ctx); err != nil || len(got) != 1 {
		t.Fatalf("after the loop's attempts: %v, %v; want plugin-pii still disabled", got, err)
	}
	if err := budgets.New(ab).SetLimit(ctx, budgets.Limit{Agent: "demo", Period: time.Hour, Tokens: 1000}); err != nil {
		t.Fatal(err)
	}
	if l, ok, err := budgets.New(lb).Limit(ctx, "demo"); err != nil || !ok || l.Tokens != 1000 || l.By == nil || l.By.Identity != "admin" {
		t.Fatalf("the budget as the loop reads it: %+v, %v, %v", l, ok, err)
	}
}
