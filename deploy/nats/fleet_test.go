package natsconf_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go/jetstream"
)

// TestLoopServesAgentsAndAuditorSeesTheQueue: the loop user runs a worker
// as loop serve does (it removes an idle consumer of an older hookbus,
// registers its agent's definition, writes its presence, pulls from its
// agent's consumers, runs a request); the auditor lists the queued
// requests and the fleet (observer runs) without taking anything. No
// permission error on either connection.
func TestLoopServesAgentsAndAuditorSeesTheQueue(t *testing.T) {
	f := startSingle(t)
	admin, _ := f.connect(t, "admin")
	loop, _ := f.connect(t, "loop")
	auditor, _ := f.connect(t, "auditor")
	ctx := testContext(t)

	// What an older hookbus left: one consumer for every agent.
	if _, err := jetStream(t, admin).CreateOrUpdateConsumer(ctx, "HOOKBUS_RUNS", jetstream.ConsumerConfig{
		Durable: runs.DefaultDurable, FilterSubject: "hookbus.run.>", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	lb, err := bus.New(loop)
	if err != nil {
		t.Fatal(err)
	}
	digest := strings.Repeat("0f", 32)
	ran := make(chan string, 1)
	rc, err := runs.New(lb).Consume(ctx, runs.ConsumerConfig{
		Agents:   []runs.ServedAgent{{ID: "ops", Definition: events.Definition{Digest: digest, Name: "ops", Version: "1"}, Source: "ops.yaml"}},
		PollWait: 200 * time.Millisecond,
	}, func(_ context.Context, r *events.RunRequest) (runs.Outcome, error) {
		ran <- r.RunID
		return runs.Outcome{}, nil
	})
	if err != nil {
		t.Fatalf("loop serve as loop: %v", err)
	}
	for _, r := range []*events.RunRequest{
		{RunID: "r-ops", AgentID: "ops", SessionID: "s1", Prompt: "hi"},
		{RunID: "r-ghost", AgentID: "ghost", SessionID: "s2", Prompt: "anyone?"},
	} {
		if err := runs.New(lb).Submit(ctx, r); err != nil {
			t.Fatalf("submit as loop: %v", err)
		}
	}
	select {
	case id := <-ran:
		if id != "r-ops" {
			t.Fatalf("ran %s", id)
		}
	case <-time.After(wait):
		t.Fatal("the ops request did not run")
	}
	if _, err := runs.NewFleet(lb).View(ctx); err != nil {
		t.Fatalf("the fleet as loop: %v", err)
	}
	noErrors(t, loop)

	ab, err := bus.New(auditor, bus.WithDefaultTimeout(wait))
	if err != nil {
		t.Fatal(err)
	}
	list, _, err := runs.New(ab).List(ctx, "")
	if err != nil || len(list) != 1 || list[0].RunID != "r-ghost" || list[0].Taken {
		t.Fatalf("queued runs as auditor: %+v, %v", list, err)
	}
	view, err := runs.NewFleet(ab).View(ctx)
	if err != nil || len(view.Workers) != 1 || view.Definitions["ops"] == nil || view.Definitions["ops"].Digest != digest {
		t.Fatalf("the fleet as auditor: %+v, %v", view, err)
	}
	if why := view.WaitingFor("ghost", ""); why != "no worker serves agent ghost" {
		t.Fatalf("waiting for %q", why)
	}
	noErrors(t, auditor)
	rc.Stop()
	<-rc.Closed()
	noErrors(t, loop)
}
