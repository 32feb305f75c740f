package bus_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
)

func replayIDs(t *testing.T, b *bus.Bus, f bus.Filter) ([]string, bus.ReplayStats) {
	t.Helper()
	var got []string
	st, err := b.Replay(testCtx(t), f, func(e *events.Event) error {
		got = append(got, e.ID)
		return nil
	})
	if err != nil {
		t.Fatalf("replay %+v: %v", f, err)
	}
	if st.Events != len(got) {
		t.Fatalf("stats count %d events, fn saw %d", st.Events, len(got))
	}
	return got, st
}

func TestReplayFilters(t *testing.T) {
	b := bustest.StartBus(t)
	e := func(agent, session, run string, stage events.Stage, seq uint64) *events.Event {
		return testEvent(t, agent, session, run, stage, seq)
	}
	early := []*events.Event{
		e("support", "s1", "r1", events.StageRunStarted, 1),
		e("support", "s1", "r1", events.StageToolBefore, 2),
		e("sales", "s9", "r9", events.StageToolBefore, 1),
	}
	publishAll(t, b, early...)
	mid := time.Now()
	late := []*events.Event{
		e("support", "s1", "r2", events.StageToolBefore, 1),
		e("support", "s2", "r3", events.StageToolAfter, 1),
		e("support", "s1", "r2", events.StageRunCompleted, 2),
	}
	publishAll(t, b, late...)
	end := time.Now()
	last := e("support", "s1", "r4", events.StageRunStarted, 1)
	publishAll(t, b, last)
	all := append(append([]*events.Event{}, early...), late...)

	for _, tc := range []struct {
		name   string
		f      bus.Filter
		want   []*events.Event
		filter int
	}{
		{"agent", bus.Filter{Agent: "sales"}, []*events.Event{early[2]}, 0},
		{"session", bus.Filter{Agent: "support", Session: "s1"}, []*events.Event{early[0], early[1], late[0], late[2], last}, 0},
		{"any agent, one session", bus.Filter{Session: "s2"}, []*events.Event{late[1]}, 0},
		{"run", bus.Filter{Agent: "support", Session: "s1", Run: "r2"}, []*events.Event{late[0], late[2]}, 3},
		{"since, no until", bus.Filter{Since: end}, []*events.Event{last}, 0},
		{"stage", bus.Filter{Stages: []events.Stage{events.StageToolBefore}}, []*events.Event{early[1], early[2], late[0]}, 0},
		{"stages", bus.Filter{Agent: "support", Stages: []events.Stage{events.StageToolAfter, events.StageRunCompleted}}, []*events.Event{late[1], late[2]}, 0},
		{"since", bus.Filter{Since: mid, Until: end}, late, 0},
		{"until", bus.Filter{Until: mid}, early, 0},
		{"since, stage", bus.Filter{Since: mid, Stages: []events.Stage{events.StageToolBefore}}, late[:1], 0},
		{"since and until, run", bus.Filter{Since: mid, Until: end, Run: "r3"}, late[1:2], 2},
		{"no match", bus.Filter{Agent: "nobody"}, nil, 0},
		{"no match since", bus.Filter{Since: time.Now().Add(time.Hour)}, nil, 0},
		{"everything until end", bus.Filter{Until: end}, all, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, st := replayIDs(t, b, tc.f)
			if !slices.Equal(got, ids(tc.want)) {
				t.Fatalf("got %v\nwant %v", got, ids(tc.want))
			}
			if st.Filtered != tc.filter || st.Malformed != 0 {
				t.Errorf("stats = %+v, want %d filtered", st, tc.filter)
			}
		})
	}
}

func TestReplayEmptyStreamReturnsAtOnce(t *testing.T) {
	b := bustest.StartBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	st, err := b.Replay(ctx, bus.Filter{}, func(*events.Event) error { t.Fatal("no event expected"); return nil })
	if err != nil || st != (bus.ReplayStats{}) {
		t.Fatalf("replay of an empty stream = %+v, %v", st, err)
	}
}

// A reader caught up with a session (bus/history) asks for what came after
// the last event it read: nothing new returns at once, without reading.
func TestReplayFromPastTheEndReturnsAtOnce(t *testing.T) {
	b := bustest.StartBus(t)
	publishAll(t, b, testEvent(t, "a", "s", "r1", events.StageToolBefore, 1), testEvent(t, "a", "s", "r1", events.StageToolBefore, 2))
	last, err := b.LastEvent(testCtx(t), "a", "s", "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	st, err := b.Replay(ctx, bus.Filter{Agent: "a", Session: "s", From: last.Stored + 1}, func(*events.Event) error { t.Fatal("no event expected"); return nil })
	if err != nil || st != (bus.ReplayStats{}) {
		t.Fatalf("replay from past the end = %+v, %v", st, err)
	}
	publishAll(t, b, testEvent(t, "a", "s", "r1", events.StageToolBefore, 3))
	if got, _ := replayIDs(t, b, bus.Filter{Agent: "a", Session: "s", From: last.Stored + 1}); len(got) != 1 {
		t.Fatalf("replay from the last read = %d events, want the one stored since", len(got))
	}
}

func TestReplayReadsOnlyWhatWasThereAtStart(t *testing.T) {
	b := bustest.StartBus(t)
	var first []*events.Event
	for i := 0; i < 10; i++ {
		first = append(first, testEvent(t, "a", "s", "r1", events.StageToolBefore, uint64(i)))
	}
	publishAll(t, b, first...)
	var got []string
	st, err := b.Replay(testCtx(t), bus.Filter{Agent: "a"}, func(e *events.Event) error {
		if len(got) == 0 { // stored during the replay: not part of it
			publishAll(t, b, testEvent(t, "a", "s", "r1", events.StageToolBefore, 99))
		}
		got = append(got, e.ID)
		return nil
	})
	if err != nil || st.Events != 10 || !slices.Equal(got, ids(first)) {
		t.Fatalf("replay = %+v, %v; got %d events", st, err, len(got))
	}
}

func TestReplayStopsOnCallbackError(t *testing.T) {
	b := bustest.StartBus(t)
	publishAll(t, b, testEvent(t, "a", "s", "r", events.StageToolBefore, 1), testEvent(t, "a", "s", "r", events.StageToolBefore, 2))
	stop := errors.New("enough")
	st, err := b.Replay(testCtx(t), bus.Filter{}, func(*events.Event) error { return stop })
	if !errors.Is(err, stop) || st.Events != 1 {
		t.Fatalf("replay = %+v, %v; want fn's error after 1 event", st, err)
	}
}

func TestReplaySkipsMalformed(t *testing.T) {
	b := bustest.StartBus(t)
	good := []*events.Event{testEvent(t, "a", "s", "r1", events.StageToolBefore, 1), testEvent(t, "a", "s", "r1", events.StageToolBefore, 2)}
	publishAll(t, b, good[0])
	publishMalformed(t, b.JetStream())
	publishAll(t, b, good[1])
	got, st := replayIDs(t, b, bus.Filter{Agent: "a", Session: "s"})
	if !slices.Equal(got, ids(good)) || st != (bus.ReplayStats{Events: 2, Malformed: 3}) {
		t.Fatalf("replay = %v, %+v; want the 2 events and 3 malformed", got, st)
	}
	evs, err := b.SessionEvents(testCtx(t), "a", "s")
	if err != nil || !slices.Equal(ids(evs), ids(good)) {
		t.Fatalf("SessionEvents = %v, %v", ids(evs), err)
	}
}

func TestSessionEvents(t *testing.T) {
	b := bustest.StartBus(t)
	var want []*events.Event
	for i := 0; i < 5; i++ {
		e := testEvent(t, "support", "s1", "r1", events.Stages()[i], uint64(i))
		want = append(want, e)
		publishAll(t, b, e, testEvent(t, "support", "s2", "r2", events.StageToolBefore, uint64(i)))
	}
	got, err := b.SessionEvents(testCtx(t), "support", "s1")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(got), ids(want)) {
		t.Fatalf("got %v, want %v", ids(got), ids(want))
	}
	if got[2].Stage != events.Stages()[2] || got[2].AgentID != "support" {
		t.Errorf("event decoded wrong: %+v", got[2])
	}
	if _, err := b.SessionEvents(testCtx(t), "support", "s.1"); !errors.Is(err, events.ErrInvalidID) {
		t.Errorf("bad session id: %v", err)
	}
}

// RunEvents reads one run of a session, in stream order, the other runs
// of the session and other sessions left out; a ULID run id bounds the
// read by its time, a run id that is not one is read from the start.
func TestRunEvents(t *testing.T) {
	b := bustest.StartBus(t)
	run, custom := events.NewID(), "my-run"
	var want, wantCustom []*events.Event
	for i := 0; i < 3; i++ {
		mine := testEvent(t, "support", "s1", run, events.StageToolBefore, uint64(i+1))
		theirs := testEvent(t, "support", "s1", custom, events.StageToolAfter, uint64(i+1))
		want, wantCustom = append(want, mine), append(wantCustom, theirs)
		publishAll(t, b, mine, theirs, testEvent(t, "support", "s1", "other", events.StageToolBefore, uint64(i+1)),
			testEvent(t, "support", "s2", run, events.StageToolBefore, uint64(i+1)))
	}
	for _, tc := range []struct {
		run  string
		want []*events.Event
	}{{run, want}, {custom, wantCustom}, {events.NewID(), nil}} {
		got, err := b.RunEvents(testCtx(t), "support", "s1", tc.run)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids(got), ids(tc.want)) {
			t.Errorf("run %s: got %v, want %v", tc.run, ids(got), ids(tc.want))
		}
	}
	if _, err := b.RunEvents(testCtx(t), "support", "s.1", run); !errors.Is(err, events.ErrInvalidID) {
		t.Errorf("bad session id: %v", err)
	}
}

// consumers returns how many consumers the events stream has.
func consumers(t *testing.T, b *bus.Bus) int {
	s, err := b.JetStream().Stream(testCtx(t), b.Names().Events)
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().State.Consumers
}

func TestWaitRun(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	done := testEvent(t, "a", "s", "r1", events.StageRunCompleted, 9)
	publishAll(t, b,
		testEvent(t, "a", "s", "r0", events.StageRunFailed, 3), // another run
		testEvent(t, "a", "s", "r1", events.StageToolBefore, 8),
		done,
	)
	got, err := b.WaitRun(ctx, "a", "s", "r1")
	if err != nil || got.ID != done.ID {
		t.Fatalf("WaitRun of a finished run = %v, %v", got, err)
	}

	// Not there yet: WaitRun waits for it.
	failed := testEvent(t, "a", "s", "r2", events.StageRunFailed, 4)
	res := make(chan *events.Event, 1)
	errc := make(chan error, 1)
	go func() {
		e, err := b.WaitRun(ctx, "a", "s", "r2")
		res <- e
		errc <- err
	}()
	bustest.Eventuallyf(t, 5*time.Second, func() bool { return consumers(t, b) == 1 }, "WaitRun's consumer exists")
	publishAll(t, b, testEvent(t, "a", "s", "r2", events.StageToolBefore, 3), failed)
	select {
	case e := <-res:
		if err := <-errc; err != nil || e.ID != failed.ID {
			t.Fatalf("WaitRun = %v, %v; want run.failed %s", e, err, failed.ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitRun did not see run.failed")
	}

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := b.WaitRun(short, "a", "s", "r3"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitRun of a run that never ends = %v, want DeadlineExceeded", err)
	}
}

func TestTail(t *testing.T) {
	b := bustest.StartBus(t)
	old := testEvent(t, "a", "s", "r1", events.StageToolBefore, 1)
	publishAll(t, b, old)
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	got := make(chan *events.Event, 10)
	errc := make(chan error, 1)
	go func() {
		errc <- b.Tail(ctx, bus.Filter{Agent: "a", Run: "r2"}, func(e *events.Event) error {
			got <- e
			return nil
		})
	}()
	bustest.Eventuallyf(t, 5*time.Second, func() bool { return consumers(t, b) == 1 }, "Tail's consumer exists")
	live := testEvent(t, "a", "s", "r2", events.StageToolAfter, 2)
	publishAll(t, b, testEvent(t, "a", "s", "r1", events.StageToolAfter, 2), live)
	select {
	case e := <-got:
		if e.ID != live.ID {
			t.Fatalf("tail got %s, want only the new event of run r2 %s", e.ID, live.ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("tail did not deliver the live event")
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Tail after cancel = %v, want nil", err)
	}
	if len(got) != 0 {
		t.Fatalf("tail delivered %d extra events", len(got))
	}
}

func TestReplayLeavesNoConsumer(t *testing.T) {
	b := bustest.StartBus(t)
	publishAll(t, b, testEvent(t, "a", "s", "r", events.StageToolBefore, 1))
	for i := 0; i < 3; i++ {
		if _, err := b.SessionEvents(testCtx(t), "a", "s"); err != nil {
			t.Fatal(err)
		}
	}
	if n := consumers(t, b); n != 0 {
		t.Fatalf("%d consumers left on the events stream after 3 replays", n)
	}
}
