package interceptors_test

import (
	"context"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

func allowHook(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
	return nil, nil
}

func benchEvent(b *testing.B) *events.Event {
	ev, err := events.New(events.StageToolBefore, events.Meta{Source: "bench", AgentID: "a", SessionID: "s", RunID: "r", Subject: "bash"},
		events.ToolBefore{Call: events.ToolCall{ID: "c1", Name: "bash", Arguments: []byte(`{"cmd":"ls"}`)}})
	if err != nil {
		b.Fatal(err)
	}
	return ev
}

// BenchmarkChainOneInterceptor is one Run with one in-process interceptor
// that allows, under its (default 5s) timeout. make bench reports its ratio
// to BenchmarkBareFuncWithTimeout as inproc_hook_ns.
func BenchmarkChainOneInterceptor(b *testing.B) {
	c := interceptors.NewChain()
	if _, err := c.Register(interceptors.Registration{Plugin: "allow", Stage: events.StageToolBefore}, interceptors.Func(allowHook)); err != nil {
		b.Fatal(err)
	}
	ev, ctx := benchEvent(b), context.Background()
	b.ReportAllocs()
	for b.Loop() {
		out, err := c.Run(ctx, ev)
		if err != nil || out.Decision != interceptors.Allow {
			b.Fatal(out, err)
		}
	}
}

// BenchmarkChainOneBoundInterceptor is BenchmarkChainOneInterceptor with a
// BoundFunc: called on the chain's goroutine.
func BenchmarkChainOneBoundInterceptor(b *testing.B) {
	c := interceptors.NewChain()
	if _, err := c.Register(interceptors.Registration{Plugin: "allow", Stage: events.StageToolBefore}, interceptors.BoundFunc(allowHook)); err != nil {
		b.Fatal(err)
	}
	ev, ctx := benchEvent(b), context.Background()
	b.ReportAllocs()
	for b.Loop() {
		out, err := c.Run(ctx, ev)
		if err != nil || out.Decision != interceptors.Allow {
			b.Fatal(out, err)
		}
	}
}

// BenchmarkBareFuncWithTimeout is the floor: the same function called
// directly under context.WithTimeout.
func BenchmarkBareFuncWithTimeout(b *testing.B) {
	ev, ctx := benchEvent(b), context.Background()
	req := &interceptors.Request{Stage: ev.Stage, Event: ev}
	f := interceptors.Func(allowHook)
	b.ReportAllocs()
	for b.Loop() {
		cctx, cancel := context.WithTimeout(ctx, interceptors.DefaultTimeout)
		d, err := f.Intercept(cctx, req)
		cancel()
		if err != nil || d != nil {
			b.Fatal(d, err)
		}
	}
}

// BenchmarkHasNoMatch is the cost of a stage nobody intercepts.
func BenchmarkHasNoMatch(b *testing.B) {
	c := interceptors.NewChain()
	if _, err := c.Register(interceptors.Registration{Plugin: "fs", Stage: events.StageToolBefore, Tools: "fs_*"}, interceptors.Func(allowHook)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if c.Has(events.StageToolBefore, "bash", "a") || c.Has(events.StageIntake, "", "a") {
			b.Fatal("match")
		}
	}
}
