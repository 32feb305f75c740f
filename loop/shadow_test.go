package loop_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/loop/tools"
)

// A shadow registration that would deny every tool call changes nothing in
// the run; its decisions are recorded on the run's subjects, marked shadow,
// naming the stored events, and the session's next run rebuilds as if they
// were not there.
func TestShadowDecisionsRecordedNeverApplied(t *testing.T) {
	b := bustest.StartBus(t)
	chain := interceptors.NewChain(interceptors.WithShadowSink(remote.ShadowSink(b, "")))
	if _, err := chain.Register(interceptors.Registration{Plugin: "strict", Stage: events.StageToolBefore, Mode: interceptors.ModeShadow},
		interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Deny, Reason: "strict says no"}, nil
		})); err != nil {
		t.Fatal(err)
	}
	eng := newEngine(t, b, loop.Config{Hooks: chain})
	ctx := ctxT(t)
	for _, id := range []string{"r1", "r2"} {
		res, err := eng.Run(ctx, &events.RunRequest{RunID: id, AgentID: "a", SessionID: "s", Prompt: "go"})
		if err != nil || res.Reason != events.ReasonDone {
			t.Fatalf("run %s: %+v %v", id, res, err)
		}
	}
	var evs []*events.Event
	bustest.Eventuallyf(t, 10*time.Second, func() bool {
		evs = evs[:0]
		_, err := b.Replay(ctx, bus.Filter{Agent: "a", Session: "s"}, func(e *events.Event) error { evs = append(evs, e); return nil })
		return err == nil && len(decidedBy(t, evs, "strict")) == 4
	}, "four shadow decisions (two tool calls in each of two runs)")
	stored := map[string]bool{}
	for _, e := range evs {
		if e.Stage == events.StageToolBefore {
			stored[e.ID] = true
		}
	}
	for _, d := range decidedBy(t, evs, "strict") {
		if !d.Shadow || d.Decision != "deny" || !stored[d.EventID] {
			t.Fatalf("shadow decision %+v (stored tool.before ids %v)", d, stored)
		}
	}
	s, err := loop.RebuildSession(evs)
	if err != nil || len(s.Skipped) != 0 {
		t.Fatalf("rebuild with shadow decisions: %v %v", err, s.Skipped)
	}
}

// BenchmarkShadowLatency runs the demo run (two tool calls) with no
// shadow registration, and with a shadow registration on tool.before that
// sleeps 20ms per call: the run's time per op should not change.
func BenchmarkShadowLatency(b *testing.B) {
	for _, tc := range []struct {
		name  string
		sleep time.Duration
	}{{"none", 0}, {"sleeping-20ms", 20 * time.Millisecond}} {
		b.Run(tc.name, func(b *testing.B) {
			chain := interceptors.NewChain(interceptors.WithShadowSink(func(context.Context, *events.Event, interceptors.CallRecord) {}))
			if tc.sleep > 0 {
				if _, err := chain.Register(interceptors.Registration{Plugin: "slow", Stage: events.StageToolBefore, Mode: interceptors.ModeShadow},
					interceptors.Func(func(ctx context.Context, _ *interceptors.Request) (*interceptors.Decision, error) {
						select {
						case <-time.After(tc.sleep):
						case <-ctx.Done():
						}
						return &interceptors.Decision{Kind: interceptors.Deny}, nil
					})); err != nil {
					b.Fatal(err)
				}
			}
			j := looptest.New()
			eng, err := loop.New(loop.Config{Emitter: j, History: j, Model: stepModel{steps: 3, tokens: 10}, Tools: benchTools(), Hooks: chain})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				id := events.NewID()
				if _, err := eng.Run(ctx, &events.RunRequest{RunID: id, AgentID: "a", SessionID: id, Prompt: "go"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func benchTools() []loop.Tool { return tools.Builtin("") }
