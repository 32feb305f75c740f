package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// testEvent and sizedEvent build valid events (bustest.Event, SizedEvent).
var (
	testEvent  = bustest.Event
	sizedEvent = bustest.SizedEvent
)

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// publishAll stores evs (PublishSync, so they are in the stream on return).
func publishAll(t testing.TB, b interface {
	PublishSync(context.Context, *events.Event) error
}, evs ...*events.Event) {
	t.Helper()
	ctx := testCtx(t)
	for _, e := range evs {
		if err := b.PublishSync(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
}

// publishMalformed stores three messages on <prefix>.evt.a.s.tool.before
// that are not hookbus events.
func publishMalformed(t testing.TB, js jetstream.JetStream) {
	t.Helper()
	ctx := testCtx(t)
	good := testEvent(t, "a", "s", "r1", events.StageToolBefore, 1)
	h, _, err := events.Encode(good)
	if err != nil {
		t.Fatal(err)
	}
	badType := make(nats.Header)
	for k, v := range h {
		badType[k] = v
	}
	badType.Set("ce-type", "hookbus.nope")
	badType.Set(events.HeaderMsgID, events.NewID())
	badJSON := make(nats.Header)
	for k, v := range h {
		badJSON[k] = v
	}
	badJSON.Set(events.HeaderMsgID, events.NewID())
	for _, m := range []*nats.Msg{
		{Subject: "hookbus.evt.a.s.tool.before", Data: []byte("garbage, no headers")},
		{Subject: "hookbus.evt.a.s.tool.before", Header: badType, Data: good.Data},
		{Subject: "hookbus.evt.a.s.tool.before", Header: badJSON, Data: []byte(`{"call":`)},
	} {
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
}

// ids returns the events' ids.
func ids(evs []*events.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}
