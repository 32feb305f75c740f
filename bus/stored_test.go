package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
)

// An event whose headers name another session than the subject it was
// stored on is not rebuilt into either session: replay and SessionEvents
// skip it as malformed.
func TestEventStoredOnAnotherSessionsSubjectIsMalformed(t *testing.T) {
	b := bustest.StartBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	good, err := events.New(events.StageStop, events.Meta{Source: "t", AgentID: "a", SessionID: "s1", RunID: "r1"}, events.Stop{Reason: "done"})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.PublishSync(ctx, good); err != nil {
		t.Fatal(err)
	}
	stray, err := events.New(events.StageStop, events.Meta{Source: "t", AgentID: "a", SessionID: "s2", RunID: "r2"}, events.Stop{Reason: "done"})
	if err != nil {
		t.Fatal(err)
	}
	h, body, err := events.Encode(stray)
	if err != nil {
		t.Fatal(err)
	}
	// Headers of session s2, stored on session s1's subject.
	msg := &nats.Msg{Subject: "hookbus.evt.a.s1.stop", Header: nats.Header(h), Data: body}
	if _, err := b.JetStream().PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	evs, err := b.SessionEvents(ctx, "a", "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].ID != good.ID {
		t.Fatalf("session s1 rebuilt from %d events: %+v", len(evs), evs)
	}
	st, err := b.Replay(ctx, bus.Filter{}, func(*events.Event) error { return nil })
	if err != nil || st.Events != 1 || st.Malformed != 1 {
		t.Fatalf("replay = %+v, %v; want 1 event and 1 malformed", st, err)
	}
}
