package bridge_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bridge"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
)

// Two closers racing on the same idle sessions: each session's run ends
// once, as idle, its end chained after its last event. A session that
// spoke within the idle time, or has ended, is left alone.
func TestCloseIdleOnce(t *testing.T) {
	b := bustest.StartBus(t)
	one, err := bridge.New(bridge.Config{Store: b})
	if err != nil {
		t.Fatal(err)
	}
	two, err := bridge.New(bridge.Config{Store: b})
	if err != nil {
		t.Fatal(err)
	}
	sessions := []string{"s1", "s2", "s3", "s4", "s5"}
	for _, s := range sessions {
		handle(t, one, input(t, s, "UserPromptSubmit", `, "prompt": "hi"`))
	}
	handle(t, one, input(t, "ended", "UserPromptSubmit", `, "prompt": "hi"`))
	handle(t, one, input(t, "ended", "SessionEnd", `, "reason": "other"`))
	ctx := context.Background()
	later := time.Now().Add(time.Hour)

	// Not idle yet.
	if closed, err := one.CloseIdle(ctx, "s1", 2*time.Hour, later); err != nil || closed {
		t.Fatalf("CloseIdle within the idle time: %v, %v", closed, err)
	}
	if closed, err := one.CloseIdle(ctx, "ended", time.Minute, later); err != nil || closed {
		t.Fatalf("CloseIdle of an ended session: %v, %v", closed, err)
	}

	for _, s := range sessions {
		var wg sync.WaitGroup
		var n sync.Map
		for i, br := range []*bridge.Bridge{one, two, one, two} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				closed, err := br.CloseIdle(ctx, s, time.Minute, later)
				if err != nil {
					t.Errorf("CloseIdle %s: %v", s, err)
				}
				n.Store(i, closed)
			}()
		}
		wg.Wait()
		wins := 0
		n.Range(func(_, v any) bool {
			if v.(bool) {
				wins++
			}
			return true
		})
		if wins != 1 {
			t.Fatalf("session %s: %d closers recorded the end, want 1", s, wins)
		}
		evs, err := b.SessionEvents(ctx, bridge.DefaultAgent, s)
		if err != nil {
			t.Fatal(err)
		}
		last := evs[len(evs)-1]
		var rc events.RunCompleted
		if last.Stage != events.StageRunCompleted || last.DecodeData(&rc) != nil || rc.Reason != bridge.ReasonIdle ||
			last.PrevHash != evs[len(evs)-2].ChainHash() || last.Seq != evs[len(evs)-2].Seq+1 {
			t.Fatalf("session %s: last event %s %+v, want run.completed idle chained after the one before", s, last.Stage, rc)
		}
		if got := stages(t, b, bridge.DefaultAgent, s); got != "1:intake 1:run.started 1:run.completed" {
			t.Fatalf("session %s: %s", s, got)
		}
	}
}
