package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The runs stream allows no message schedules and holds only run
// requests; wake-ups have a stream of their own, which allows them.
func TestProvisionedStreamsSchedules(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	runs, err := b.JetStream().Stream(ctx, b.Names().Runs)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := runs.CachedInfo().Config; cfg.AllowMsgSchedules || !slices.Equal(cfg.Subjects, []string{"hookbus.run.>"}) {
		t.Fatalf("runs stream: schedules %v, subjects %v", cfg.AllowMsgSchedules, cfg.Subjects)
	}
	wakes, err := b.JetStream().Stream(ctx, b.Names().Wakes)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := wakes.CachedInfo().Config; !cfg.AllowMsgSchedules || !slices.Equal(cfg.Subjects, []string{"hookbus.wake.>"}) {
		t.Fatalf("wakes stream: schedules %v, subjects %v", cfg.AllowMsgSchedules, cfg.Subjects)
	}
	msg := &nats.Msg{Subject: "hookbus.run.demo", Data: []byte(`{}`), Header: nats.Header{
		"Nats-Schedule": []string{"@at 2030-01-01T00:00:00Z"}, "Nats-Schedule-Target": []string{"hookbus.run.demo2"}}}
	var apiErr *jetstream.APIError
	if _, err := b.JetStream().PublishMsg(ctx, msg); !errors.As(err, &apiErr) || apiErr.ErrorCode != jetstream.JSErrCodeMessageSchedulesDisabled {
		t.Fatalf("a scheduled message on the runs stream: %v, want it refused", err)
	}
}

// A runs stream made by an older hookbus (message schedules, the approval
// and wake subjects) is made again by Provision: its run requests are
// kept, its scheduled wake-ups move to the wakes stream, and the answers
// it still queued are dropped (logged).
func TestProvisionMakesAnOldRunsStreamAgain(t *testing.T) {
	_, nc := bustest.Start(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "HOOKBUS_RUNS", Subjects: []string{"hookbus.run.>", "hookbus.approval.>", "hookbus.wake.>"},
		Retention: jetstream.WorkQueuePolicy, AllowMsgSchedules: true}); err != nil {
		t.Fatal(err)
	}
	run := events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "hi", SubmittedAt: time.Now().UTC()}
	body, _ := json.Marshal(run)
	if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: "hookbus.run.demo", Data: body, Header: nats.Header{jetstream.MsgIDHeader: []string{run.RunID}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "hookbus.approval.demo", []byte(`{"run_id":"r9","session_id":"s9","call_id":"c1","action":"approve","by":"old","answer_id":"01J"}`)); err != nil {
		t.Fatal(err)
	}
	due := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	wake := &nats.Msg{Subject: "hookbus.wake.demo.r7", Data: []byte(`{"run_id":"r7","session_id":"s7","answer":{"action":"expire","answer_id":"01K"}}`), Header: nats.Header{
		"Nats-Schedule": []string{"@at " + due.Format(time.RFC3339)}, "Nats-Schedule-Target": []string{"hookbus.approval.demo"}}}
	if _, err := js.PublishMsg(ctx, wake); err != nil {
		t.Fatal(err)
	}

	b := bustest.Provision(t, nc)
	runs, err := js.Stream(ctx, "HOOKBUS_RUNS")
	if err != nil {
		t.Fatal(err)
	}
	if cfg := runs.CachedInfo().Config; cfg.AllowMsgSchedules || len(cfg.Subjects) != 1 {
		t.Fatalf("runs stream after provisioning: %+v", cfg)
	}
	m, err := runs.GetLastMsgForSubject(ctx, "hookbus.run.demo")
	if err != nil || m.Header.Get(jetstream.MsgIDHeader) != run.RunID || string(m.Data) != string(body) {
		t.Fatalf("the run request after provisioning: %v, %v", m, err)
	}
	if n := runs.CachedInfo().State.Msgs; n != 1 {
		t.Fatalf("runs stream holds %d messages, want the run request", n)
	}
	wakes, err := js.Stream(ctx, b.Names().Wakes)
	if err != nil {
		t.Fatal(err)
	}
	sched, err := wakes.GetLastMsgForSubject(ctx, "hookbus.wake.demo.r7")
	if err != nil || sched.Header.Get("Nats-Schedule") != "@at "+due.Format(time.RFC3339) || sched.Header.Get("Nats-Schedule-Target") != "hookbus.wake.demo.r7.due" {
		t.Fatalf("the wake-up after provisioning: %+v, %v", sched, err)
	}
	if err := b.CheckProvisioned(ctx); err != nil {
		t.Fatalf("CheckProvisioned after the migration: %v", err)
	}
}

// A person's answer is stored on its writer's subject, read back with the
// writer, and found by stage filters (replay, observers); only
// approval.resolved has writers' subjects; a writer that is not a subject
// token is refused.
func TestAnswerOnItsWritersSubject(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	ev, err := events.New(events.StageApprovalResolved, events.Meta{Source: "test", AgentID: "demo", SessionID: "s1", RunID: events.NewID(), Seq: 1},
		events.ApprovalResolved{CallID: "c1", Action: events.ActionApprove, By: "alice@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	seq, err := b.AppendAfterAs(ctx, ev, 0, "alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	s, err := b.JetStream().Stream(ctx, b.Names().Events)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := s.GetMsg(ctx, seq); err != nil || m.Subject != "hookbus.evt.demo.s1.approval.resolved.alice@example%2Ecom" {
		t.Fatalf("stored on %v (%v)", m, err)
	}
	var read []*events.Event
	if _, err := b.Replay(ctx, bus.Filter{Stages: []events.Stage{events.StageApprovalResolved}}, func(e *events.Event) error { read = append(read, e); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(read) != 1 || read[0].Writer != "alice@example.com" || read[0].ID != ev.ID {
		t.Fatalf("replayed by stage: %+v", read)
	}
	got := make(chan *events.Event, 1)
	o, err := b.Observe(ctx, bus.ObserveConfig{Durable: "answers", Stages: []events.Stage{events.StageApprovalResolved}}, func(_ context.Context, e *events.Event) error {
		got <- e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Stop()
	select {
	case e := <-got:
		if e.Writer != "alice@example.com" {
			t.Fatalf("observed writer %q", e.Writer)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the observer did not get the answer")
	}

	other, _ := events.New(events.StageToolAfter, events.Meta{Source: "test", AgentID: "demo", SessionID: "s1", RunID: events.NewID(), Seq: 1}, events.ToolAfter{})
	if _, err := b.AppendAfterAs(ctx, other, seq, "alice"); !errors.Is(err, bus.ErrInvalidOption) {
		t.Fatalf("tool.after on a writer's subject: %v", err)
	}
	// A message on a subject whose writer token is not in WriterToken's
	// form is not an event.
	bad := ev.Clone()
	bad.ID = events.NewID()
	hdr, body, _ := events.Encode(bad)
	if _, err := b.JetStream().PublishMsg(ctx, &nats.Msg{Subject: "hookbus.evt.demo.s1.approval.resolved.alice%2e", Header: nats.Header(hdr), Data: body}); err != nil {
		t.Fatal(err)
	}
	read = nil
	stats, err := b.Replay(ctx, bus.Filter{Stages: []events.Stage{events.StageApprovalResolved}}, func(e *events.Event) error { read = append(read, e); return nil })
	if err != nil || len(read) != 1 || stats.Malformed != 1 {
		t.Fatalf("replay: %d events, %+v, %v; want the bad subject's message skipped as malformed", len(read), stats, err)
	}
}
