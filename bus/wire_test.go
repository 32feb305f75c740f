package bus_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go/jetstream"
)

// A fenced append stores the event's encoding as it is (its headers as
// events.Encode writes them, its data as the body) plus the fence's two
// headers, and nothing else: the first append of a bus, and the later ones
// (written into the headers of messages acknowledged before them).
func TestAppendStoresTheEncodingAndTheFence(t *testing.T) {
	b := bustest.StartBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	claim, err := b.Claim(ctx, fenceEvent(t, events.StageRunStarted, "r1"), 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := b.JetStream().Stream(ctx, b.Names().Events)
	if err != nil {
		t.Fatal(err)
	}
	claimSubject, err := b.Subjects().Event("a", "s1", events.StageRunStarted)
	if err != nil {
		t.Fatal(err)
	}
	for i, stage := range []events.Stage{events.StageToolBefore, events.StageStepStarted, events.StageToolAfter, events.StageStepCompleted} {
		e := fenceEvent(t, stage, "r1")
		e.Seq, e.PrevHash = uint64(i+2), "abc"
		if i%2 == 0 {
			e.Subject, e.Traceparent = "calc ulator", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
			err = b.AppendSync(ctx, e, claim)
		} else if err = b.Append(ctx, e, claim); err == nil {
			err = b.Flush(ctx, "r1")
		}
		if err != nil {
			t.Fatal(err)
		}
		want, body, err := events.Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		want[jetstream.ExpectedLastSubjSeqHeader] = []string{"1"}
		want[jetstream.ExpectedLastSubjSeqSubjHeader] = []string{claimSubject}
		subject, err := b.Subjects().Event(e.AgentID, e.SessionID, e.Stage)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.GetLastMsgForSubject(ctx, subject)
		if err != nil {
			t.Fatal(err)
		}
		if claim != 1 {
			t.Fatalf("claim at %d, the test expects 1", claim)
		}
		if !maps.EqualFunc(map[string][]string(got.Header), want, slices.Equal) {
			t.Errorf("%s: stored headers\n %v\nwant\n %v", stage, got.Header, want)
		}
		if string(got.Data) != string(body) {
			t.Errorf("%s: stored body %s, want %s", stage, got.Data, body)
		}
	}
}
