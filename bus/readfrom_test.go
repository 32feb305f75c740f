package bus_test

import (
	"slices"
	"sync/atomic"
	"testing"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
)

// msgGets counts the single-message reads of the events stream
// ($JS.API.STREAM.MSG.GET) every client makes.
type msgGets struct {
	nc *nats.Conn
	n  atomic.Int32
}

func countMsgGets(t *testing.T, nc *nats.Conn) *msgGets {
	t.Helper()
	g := &msgGets{nc: nc}
	if _, err := nc.Subscribe("$JS.API.STREAM.MSG.GET.>", func(*nats.Msg) { g.n.Add(1) }); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return g
}

// since returns how many were made since the last call (every request sent
// before it is counted: the server routes a request to the counter before
// it answers it, and the counter's flush waits for what was routed).
func (g *msgGets) since(t *testing.T, last *int32) int32 {
	t.Helper()
	if err := g.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	n := g.n.Load()
	d := n - *last
	*last = n
	return d
}

func compactAfter(t *testing.T, agent, session, run string, seq, readFrom uint64) *events.Event {
	t.Helper()
	e, err := events.New(events.StageCompactAfter, events.Meta{Source: "hookbus/test", AgentID: agent, SessionID: session, RunID: run, Step: 1, Seq: seq},
		events.CompactAfter{MessagesBefore: 10, MessagesAfter: 2, Summary: "so far", ReadFrom: readFrom})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// storedAt returns the stream sequence of the event with id among the
// session's events, read by a Bus of its own.
func storedAt(t *testing.T, b *bus.Bus, id string) uint64 {
	t.Helper()
	var at uint64
	if _, err := b.Replay(testCtx(t), bus.Filter{Agent: "a", Session: "s"}, func(e *events.Event) error {
		if e.ID == id {
			at = e.Stored
		}
		return nil
	}); err != nil || at == 0 {
		t.Fatalf("event %s not found: %v", id, err)
	}
	return at
}

// A Bus reads a session it has read before from where that read started,
// without asking for its last compaction: one request for a single
// message (the session's last) instead of two. What it returns is what a
// Bus that never read the session returns, through compactions another
// Bus stored since, one that cannot be read, and a message that is not an
// event.
func TestSessionEventsReadAgainFromWhereTheLastReadStarted(t *testing.T) {
	srv, nc := bustest.Start(t)
	b := bustest.Provision(t, nc)
	other := bustest.Provision(t, bustest.Conn(t, srv)) // another worker's
	gets := countMsgGets(t, bustest.Conn(t, srv))
	var last int32
	read := func(step string, wantGets int32) {
		t.Helper()
		gets.since(t, &last) // the writers' own reads
		got, err := b.SessionEvents(testCtx(t), "a", "s")
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if n := gets.since(t, &last); wantGets >= 0 && n != wantGets {
			t.Errorf("%s: %d message gets, want %d", step, n, wantGets)
		}
		fresh, err := bustest.Provision(t, bustest.Conn(t, srv)).SessionEvents(testCtx(t), "a", "s")
		if err != nil {
			t.Fatalf("%s: fresh read: %v", step, err)
		}
		gets.since(t, &last)
		if !slices.Equal(ids(got), ids(fresh)) {
			t.Fatalf("%s: read %v, a fresh Bus reads %v", step, ids(got), ids(fresh))
		}
	}
	publishAll(t, other, testEvent(t, "a", "s", "r1", events.StageRunStarted, 1), testEvent(t, "a", "s", "r1", events.StageToolBefore, 2))
	read("first read", 2)
	publishAll(t, other, testEvent(t, "a", "s", "r1", events.StageRunCompleted, 3))
	read("read again", 1)

	started := testEvent(t, "a", "s", "r2", events.StageRunStarted, 1)
	publishAll(t, other, started)
	publishAll(t, other, compactAfter(t, "a", "s", "r2", 2, storedAt(t, other, started.ID)), testEvent(t, "a", "s", "r2", events.StageRunCompleted, 3))
	read("compacted by another worker", 1)
	publishAll(t, other, testEvent(t, "a", "s", "r3", events.StageRunStarted, 1))
	read("read again after the compaction", 1)

	publishAll(t, other, compactAfter(t, "a", "s", "r3", 2, 0)) // names no point: read everything
	read("a compaction that cannot be read", -1)
	read("read again after it", 1)

	started = testEvent(t, "a", "s", "r4", events.StageRunStarted, 1)
	publishAll(t, other, started)
	publishAll(t, other, compactAfter(t, "a", "s", "r4", 2, storedAt(t, other, started.ID)))
	read("compacted again", -1)
	publishMalformed(t, other.JetStream()) // on the session's subjects
	read("a message that is not an event", -1)
	read("read again after it", 2)
}
