package interceptors

import (
	"context"
	"sync"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/internal/deadlinectx"
)

// pending is one interceptor call in flight. The call runs in its own
// goroutine so that the timeout holds even when the interceptor ignores ctx.
// That goroutine writes only res and then signals done; the waiter reads res
// only after receiving from done, and an abandoned call's pending is dropped
// (never pooled again), so a late answer cannot reach shared state.
//
// A mutating ContextBound interceptor is called on the chain's goroutine
// instead (callBound): it returns once its ctx ends, so the timeout holds
// without a goroutine, and nothing is ever abandoned.
//
// A pending is pooled with its done channel, its timer and its call
// function; what the interceptor sees (its ctx and its Request, which it
// may keep) is made per call, in one allocation.
type pending struct {
	e     *entry
	cs    *callState
	start time.Time
	done  chan struct{} // one send per call, when the interceptor returned
	timer *time.Timer   // the waiter's deadline (stopped when idle)
	call  func()        // p.run then the send on done, for go p.call()
	res   result
	// abandoned is set when the waiter gave up on the call (its deadline or
	// the chain's ctx passed first): the pending stays with its goroutine.
	abandoned bool
}

// callState is what one call gives the interceptor: its ctx (ending at the
// call's deadline, armed only when the interceptor waits on it) and its
// request.
type callState struct {
	ctx deadlinectx.Context
	req Request
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

var pendings = sync.Pool{New: func() any {
	p := &pending{done: make(chan struct{}, 1), timer: time.NewTimer(time.Hour)}
	p.timer.Stop()
	p.call = func() {
		defer func() { p.done <- struct{}{} }() // last: the waiter may reuse p at once
		p.run()
	}
	return p
}}

// newPending prepares a call of e's interceptor on ev under e's timeout.
func newPending(ctx context.Context, e *entry, ev *events.Event) *pending {
	p := pendings.Get().(*pending)
	// The latency counts from the instant the timeout does: a call that
	// times out is never recorded as faster than its timeout, even when
	// this goroutine is preempted here.
	p.start = time.Now()
	p.e = e
	p.cs = &callState{}
	deadlinectx.Init(&p.cs.ctx, ctx, p.start.Add(e.reg.Timeout))
	deadline, _ := p.cs.ctx.Deadline()
	p.cs.req = Request{Stage: ev.Stage, Event: ev, Registration: e.reg, Deadline: deadline}
	return p
}

// release puts p back in the pool once the chain is done with it; an
// abandoned call's pending stays with its goroutine.
func (p *pending) release() {
	if p.abandoned {
		return
	}
	*p = pending{done: p.done, timer: p.timer, call: p.call}
	pendings.Put(p)
}

// cancel ends the call's ctx.
func (p *pending) cancel() { p.cs.ctx.Cancel() }

// start calls e's interceptor on ev under e's timeout, in a goroutine of
// its own.
func (c *Chain) start(ctx context.Context, e *entry, ev *events.Event) *pending {
	p := newPending(ctx, e, ev)
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
	if r.err != nil {
		if err := p.cs.ctx.Err(); err != nil {
			r.err = timeoutError(&p.e.reg, err)
		}
	}
	r.latency = time.Since(p.start)
	return p, r
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
	p.res.dec, p.res.err = p.e.ic.Intercept(&p.cs.ctx, &p.cs.req)
	returned = true
}

// wait returns the call's result, or a timeout error when its deadline (or
// ctx, the chain's) passes first; an answer that arrives together with the
// deadline wins. The call's ctx is canceled on return.
func (p *pending) wait(ctx context.Context) result {
	defer p.cancel()
	p.timer.Reset(time.Until(p.cs.req.Deadline))
	for {
		select {
		case <-p.done:
			p.timer.Stop()
			r := p.res
			r.latency = time.Since(p.start)
			return r
		case <-p.timer.C:
		case <-ctx.Done():
			p.timer.Stop()
		}
		select {
		case <-p.done:
			r := p.res
			r.latency = time.Since(p.start)
			return r
		default:
		}
		// The call's ctx ends with the chain's or at the deadline; its
		// error, taken before the cancel, says which.
		if err := p.cs.ctx.Err(); err != nil {
			p.abandoned = true
			return result{err: timeoutError(&p.e.reg, err), latency: time.Since(p.start)}
		}
		p.timer.Reset(time.Until(p.cs.req.Deadline)) // woken early by the clock: wait on
	}
}
