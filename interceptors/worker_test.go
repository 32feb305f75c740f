package interceptors_test

import (
	"context"
	"errors"
	"fmt"
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

// own reports whether reason is one of the answers to the call of event id.
func own(reason, id string) bool { return reason == id || reason == "stale "+id }

// A Func that answers after its timeout fired, or after the run's ctx
// ended, hands its answer to nobody: each run gets the answers of its own
// calls, the workers are free again, and none is left once the chain is
// dropped.
func TestLateAnswersStayWithTheirCall(t *testing.T) {
	base := runtime.NumGoroutine()
	c := interceptors.NewChain()
	stale := func(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
		<-ctx.Done() // answers once its timeout fired or its run ended
		return &interceptors.Decision{Kind: interceptors.Deny, Reason: "stale " + req.Event.ID}, nil
	}
	echo := func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
		if req.Event.Subject == "cancel" {
			return nil, nil
		}
		return &interceptors.Decision{Kind: interceptors.Deny, Reason: req.Event.ID}, nil
	}
	for _, r := range []struct {
		reg interceptors.Registration
		f   interceptors.Func
	}{
		{interceptors.Registration{Plugin: "late", Stage: events.StageToolBefore, Timeout: time.Millisecond}, stale},
		{interceptors.Registration{Plugin: "late-v", Stage: events.StageToolBefore, Mode: interceptors.ModeValidate, Timeout: time.Millisecond}, stale},
		{interceptors.Registration{Plugin: "echo", Stage: events.StageToolBefore, Mode: interceptors.ModeValidate}, echo},
	} {
		if _, err := c.Register(r.reg, r.f); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 100 {
				subject := "search"
				if (g+i)%3 == 0 {
					subject = "cancel" // the run's ctx ends while the validators run
				}
				ev, err := events.New(events.StageToolBefore, events.Meta{Source: "t", AgentID: "a", SessionID: "s", RunID: "r", Subject: subject},
					events.ToolBefore{Call: events.ToolCall{ID: "c1", Name: subject}})
				if err != nil {
					t.Error(err)
					return
				}
				ctx, cancel := context.WithCancel(context.Background())
				if subject == "cancel" {
					cancel()
				}
				out, err := c.Run(ctx, ev)
				cancel()
				switch {
				case subject == "cancel":
					if !errors.Is(err, context.Canceled) {
						t.Errorf("run canceled: %+v, %v: want its ctx's error", out, err)
					}
				case err != nil || out.Decision != interceptors.Deny || !own(out.Reason, ev.ID):
					t.Errorf("run of %s: %+v, %v: want a deny of its own", ev.ID, out, err)
				default:
					for _, rec := range out.Records {
						// A late answer may still beat its deadline's tick: it
						// is the call's own answer then, never another's.
						if f := rec.Failure; (f == nil && !own(rec.Reason, ev.ID)) || (f != nil && f.Kind != events.FailTimeout) {
							t.Errorf("run of %s: record %+v, want a timeout or an answer of its own", ev.ID, rec)
						}
					}
				}
			}
		})
	}
	wg.Wait()
	c = nil
	deadline := time.Now().Add(10 * time.Second)
	for workers() > 0 || runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before; %d workers left:\n%s", runtime.NumGoroutine(), base, workers(), buf[:runtime.Stack(buf, true)])
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// A Func that panics, or that never returns, fails its call as its policy
// says, mutating or validating; the run does not hang.
func TestFuncThatPanicsOrNeverReturns(t *testing.T) {
	never := make(chan struct{})
	t.Cleanup(func() { close(never) })
	for _, tc := range []struct {
		name string
		f    interceptors.Func
		kind string
	}{
		{"panics", func(context.Context, *interceptors.Request) (*interceptors.Decision, error) { panic("boom") }, events.FailPanic},
		{"never returns", func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			<-never // ignores its ctx
			return nil, nil
		}, events.FailTimeout},
	} {
		for _, mode := range []interceptors.Mode{interceptors.ModeMutate, interceptors.ModeValidate} {
			for _, policy := range []interceptors.Policy{interceptors.PolicyIgnore, interceptors.PolicyFail} {
				t.Run(fmt.Sprintf("%s/%s/%s", tc.name, mode, policy), func(t *testing.T) {
					c := interceptors.NewChain()
					reg := interceptors.Registration{Plugin: "p", Stage: events.StageToolBefore, Mode: mode, Policy: policy, Timeout: 20 * time.Millisecond}
					if _, err := c.Register(reg, tc.f); err != nil {
						t.Fatal(err)
					}
					ev, err := events.New(events.StageToolBefore, events.Meta{Source: "t", AgentID: "a", SessionID: "s", RunID: "r"},
						events.ToolBefore{Call: events.ToolCall{ID: "c1", Name: "bash"}})
					if err != nil {
						t.Fatal(err)
					}
					type ran struct {
						out *interceptors.ChainResult
						err error
					}
					done := make(chan ran, 1)
					go func() {
						out, err := c.Run(context.Background(), ev)
						done <- ran{out, err}
					}()
					var r ran
					select {
					case r = <-done:
					case <-time.After(10 * time.Second):
						t.Fatal("the run hangs")
					}
					want := interceptors.Allow
					if policy == interceptors.PolicyFail {
						want = interceptors.Deny
					}
					if r.err != nil || r.out.Decision != want || len(r.out.Records) != 1 || r.out.Records[0].Failure == nil || r.out.Records[0].Failure.Kind != tc.kind {
						t.Fatalf("%+v, %v: want %s with a %s failure", r.out, r.err, want, tc.kind)
					}
				})
			}
		}
	}
}
