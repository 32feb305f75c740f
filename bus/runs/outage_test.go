package runs_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
)

// An attempt that failed only because JetStream was unavailable (here: a
// real publish that no stream answers) is made again in the same delivery:
// a request allowed one attempt runs until it succeeds, and is neither
// handed back nor dropped.
func TestUnavailableAttemptsUseUpNoAttempt(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	var calls atomic.Int32
	rc, err := runs.New(b).Consume(ctx, fastRuns(runs.ConsumerConfig{Agents: runs.Agents("support"), MaxDeliver: 1}), func(ctx context.Context, r *events.RunRequest) (runs.Outcome, error) {
		if calls.Add(1) <= 2 {
			_, err := b.JetStream().Publish(ctx, "nowhere.stored", []byte("x"))
			if err == nil {
				return runs.Outcome{}, errors.New("a publish no stream captures was stored")
			}
			return runs.Outcome{}, fmt.Errorf("run %s: record: %w", r.RunID, err)
		}
		return runs.Outcome{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Stop()
	if err := runs.New(b).Submit(ctx, runReq("support", events.NewID())); err != nil {
		t.Fatal(err)
	}
	bustest.Eventuallyf(t, 20*time.Second, func() bool { return rc.Stats().Completed == 1 }, "the run acknowledged: %+v", rc.Stats())
	st := rc.Stats()
	if calls.Load() != 3 || st.Received != 1 || st.Dropped != 0 || st.Failed != 0 || st.Unavailable != 2 {
		t.Fatalf("handler called %d times, stats %+v; want 3 calls in one delivery, 2 of them unavailable, nothing dropped", calls.Load(), st)
	}
}

// A request dropped after its last attempt has its run closed (Close),
// told why; a run no closer can close is still dropped.
func TestDroppedRunIsClosed(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	var (
		mu     sync.Mutex
		closed []string
	)
	cfg := fastRuns(runs.ConsumerConfig{Agents: runs.Agents("support"), MaxDeliver: 1,
		Close: func(_ context.Context, r *events.RunRequest, cause error) error {
			mu.Lock()
			defer mu.Unlock()
			closed = append(closed, r.RunID+": "+cause.Error())
			return nil
		}})
	rc, err := runs.New(b).Consume(ctx, cfg, func(context.Context, *events.RunRequest) (runs.Outcome, error) {
		return runs.Outcome{}, errors.New("the model refused")
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Stop()
	req := runReq("support", events.NewID())
	if err := runs.New(b).Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return rc.Stats().Dropped == 1 }, "the run dropped: %+v", rc.Stats())
	mu.Lock()
	defer mu.Unlock()
	want := req.RunID + ": its request was dropped after 1 attempts, the last failing with: the model refused"
	if len(closed) != 1 || closed[0] != want || rc.Stats().Closed != 1 {
		t.Fatalf("closed %q, stats %+v; want [%q]", closed, rc.Stats(), want)
	}
}

// A wake-up that JetStream cannot store (no stream captures its subject
// for a while) is sent again until it is stored, then delivered when due.
func TestWakeUpRetriedUntilStored(t *testing.T) {
	logs := &bustest.Buffer{}
	b := bustest.StartBus(t, bus.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	ctx := testCtx(t)
	q := runs.New(b)
	got := make(chan events.Wake, 1)
	wc, err := q.ConsumeWakes(ctx, runs.WakeConsumerConfig{Agent: "ops"}, func(_ context.Context, w events.Wake) error {
		got <- w
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Stop()
	s, err := b.JetStream().Stream(ctx, b.Names().Wakes)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	away := cfg
	away.Subjects = []string{"elsewhere.>"}
	if _, err := b.JetStream().UpdateStream(ctx, away); err != nil {
		t.Fatal(err)
	}
	stored := make(chan error, 1)
	go func() {
		stored <- q.WakeAt(ctx, events.Wake{RunID: "r1", AgentID: "ops", SessionID: "s1", At: time.Now().Add(time.Second)})
	}()
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return strings.Contains(logs.String(), "wake-up not stored") }, "a failed try logged:\n%s", logs)
	if _, err := b.JetStream().UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-stored:
		if err != nil {
			t.Fatalf("WakeAt: %v\n%s", err, logs)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("WakeAt did not return once the stream was back")
	}
	select {
	case w := <-got:
		if w.RunID != "r1" {
			t.Fatalf("wake-up %+v", w)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the wake-up was not delivered:\n%s", logs)
	}
}
