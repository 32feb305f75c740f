package interceptors

import (
	"context"
	"time"

	"github.com/hookbus/hookbus/events"
)

// pending is one interceptor call in flight. The call runs in its own
// goroutine so that the timeout holds even when the interceptor ignores ctx.
// That goroutine writes only res and then closes done; the waiter reads res
// only after done is closed, and an abandoned call's pending is dropped, so
// a late answer cannot reach shared state.
//
// A mutating ContextBound interceptor is called on the chain's goroutine
// instead (callBound): it returns once its ctx ends, so the timeout holds
// without a goroutine, and nothing is ever abandoned.
type pending struct {
	e      *entry
	ctx    context.Context
	cancel context.CancelFunc
	req    Request
	start  time.Time
	done   chan struct{} // nil for a call on the chain's goroutine
	res    result
}

type result struct {
	dec     *Decision
	err     error
	latency time.Duration
}

// ContextBound is implemented by an Interceptor whose Intercept returns
// promptly once its ctx is done, whatever it is waiting for (a transport
// whose request is bounded by ctx, as remote.Client's NATS request is), and
// which never calls runtime.Goexit.
//
// The chain calls a mutating ContextBound interceptor on the goroutine
// running the chain rather than in a goroutine of its own: the call's
// timeout still holds (the call returns at its ctx's deadline and is
// recorded as a timeout as any other), a panic is still recovered and
// recorded, and no call is ever abandoned; it saves a goroutine and a
// wake-up per call. Validating interceptors still run in goroutines of
// their own, in parallel. An interceptor that breaks the promise holds the
// chain up past its timeout: implement ContextBound only when it holds.
type ContextBound interface {
	Interceptor
	// BoundByContext marks the promise; the chain never calls it.
	BoundByContext()
}

// newPending prepares a call of e's interceptor on ev under e's timeout.
func newPending(ctx context.Context, e *entry, ev *events.Event) *pending {
	// The latency counts from the instant the timeout does: a call that
	// times out is never recorded as faster than its timeout, even when
	// this goroutine is preempted here.
	start := time.Now()
	cctx, cancel := context.WithDeadline(ctx, start.Add(e.reg.Timeout))
	deadline, _ := cctx.Deadline()
	p := &pending{e: e, ctx: cctx, cancel: cancel, start: start}
	p.req = Request{Stage: ev.Stage, Event: ev, Registration: e.reg, Deadline: deadline}
	return p
}

// start calls e's interceptor on ev under e's timeout, in a goroutine of
// its own.
func (c *Chain) start(ctx context.Context, e *entry, ev *events.Event) *pending {
	p := newPending(ctx, e, ev)
	p.done = make(chan struct{})
	go p.call()
	return p
}

// callBound calls e's ContextBound interceptor on ev under e's timeout, on
// this goroutine, and returns what wait would: a call that failed once its
// deadline (or ctx) passed is a timeout; an answer wins.
func (c *Chain) callBound(ctx context.Context, e *entry, ev *events.Event) (*pending, result) {
	p := newPending(ctx, e, ev)
	defer p.cancel()
	p.run()
	r := p.res
	if r.err != nil && p.ctx.Err() != nil {
		r.err = timeoutError(&p.e.reg, p.ctx.Err())
	}
	r.latency = time.Since(p.start)
	return p, r
}

func (p *pending) call() {
	defer close(p.done)
	p.run()
}

// run calls the interceptor and sets res, turning a panic (or
// runtime.Goexit, on a goroutine of the call's own) into an error.
func (p *pending) run() {
	returned := false
	defer func() {
		if v := recover(); v != nil {
			p.res = result{err: recovered(v)}
		} else if !returned {
			p.res = result{err: recovered("runtime.Goexit")} // e.g. t.FailNow in a handler
		}
	}()
	p.res.dec, p.res.err = p.e.ic.Intercept(p.ctx, &p.req)
	returned = true
}

// wait returns the call's result, or a timeout error when its deadline (or
// ctx) passes first; an answer that arrives together with the deadline wins.
func (p *pending) wait() result {
	defer p.cancel()
	select {
	case <-p.done:
	case <-p.ctx.Done():
		select {
		case <-p.done:
		default:
			return result{err: timeoutError(&p.e.reg, p.ctx.Err()), latency: time.Since(p.start)}
		}
	}
	r := p.res
	r.latency = time.Since(p.start)
	return r
}
