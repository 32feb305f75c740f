package interceptors_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// A Func runs on a worker parked between calls; the workers of calls
// abandoned at their timeout end once their calls return, and parked
// workers end once the chain no longer needs them: nothing is left running.
func TestWorkersEnd(t *testing.T) {
	release := make(chan struct{})
	c := interceptors.NewChain()
	if _, err := c.Register(interceptors.Registration{Plugin: "slow", Stage: events.StageToolBefore, Timeout: 20 * time.Millisecond},
		interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			<-release // ignores its ctx
			return nil, nil
		})); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a", "b", "c"} {
		if _, err := c.Register(interceptors.Registration{Plugin: p, Stage: events.StageToolBefore, Mode: interceptors.ModeValidate},
			interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) { return nil, nil })); err != nil {
			t.Fatal(err)
		}
	}
	ev, err := events.New(events.StageToolBefore, events.Meta{Source: "t", AgentID: "a", SessionID: "s", RunID: "r"},
		events.ToolBefore{Call: events.ToolCall{ID: "c1", Name: "bash"}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			out, err := c.Run(context.Background(), ev)
			if err != nil || len(out.Records) != 4 || out.Records[0].Failure == nil || out.Records[0].Failure.Kind != events.FailTimeout {
				t.Errorf("Run: %+v, %v: want a timeout and three allows", out, err)
			}
		})
	}
	wg.Wait()
	if n := workers(); n < 8 {
		t.Fatalf("%d workers, want the 8 abandoned calls' at least", n)
	}
	close(release)
	deadline := time.Now().Add(10 * time.Second)
	for workers() > 0 {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d workers left:\n%s", workers(), buf[:runtime.Stack(buf, true)])
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// workers counts the chain's worker goroutines.
func workers() int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "hookbus/interceptors.work(")
}
