package interceptors_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// A BoundFunc keeps a Func's guarantees for what honours its ctx: a call
// that waits on its ctx is a timeout at the registration's timeout, a panic
// is recorded, an answer is taken.
func TestBoundFunc(t *testing.T) {
	c := interceptors.NewChain()
	waits := interceptors.BoundFunc(func(ctx context.Context, _ *interceptors.Request) (*interceptors.Decision, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	panics := interceptors.BoundFunc(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		panic("boom")
	})
	denies := interceptors.BoundFunc(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		return &interceptors.Decision{Kind: interceptors.Deny, Reason: "no"}, nil
	})
	for _, r := range []struct {
		plugin string
		ic     interceptors.Interceptor
	}{{"waits", waits}, {"panics", panics}, {"denies", denies}} {
		if _, err := c.Register(interceptors.Registration{Plugin: r.plugin, Stage: events.StageToolBefore, Timeout: 50 * time.Millisecond}, r.ic); err != nil {
			t.Fatal(err)
		}
	}
	ev, err := events.New(events.StageToolBefore, events.Meta{Source: "t", AgentID: "a", SessionID: "s", RunID: "r"},
		events.ToolBefore{Call: events.ToolCall{ID: "c1", Name: "bash"}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Run(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if out.Decision != interceptors.Deny || out.Plugin != "denies" || len(out.Records) != 3 {
		t.Fatalf("result %+v: want the deny after two failures", out)
	}
	if f := out.Records[0].Failure; f == nil || f.Kind != events.FailTimeout || out.Records[0].Latency < 50*time.Millisecond {
		t.Fatalf("waiting call: %+v, want a timeout at 50ms", out.Records[0])
	}
	if f := out.Records[1].Failure; f == nil || !errors.Is(f.Err, interceptors.ErrPanic) {
		t.Fatalf("panicking call: %+v, want a recorded panic", out.Records[1])
	}
}
