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
type pending struct {
	e      *entry
	ctx    context.Context
	cancel context.CancelFunc
	req    Request
	start  time.Time
	done   chan struct{}
	res    result
}

type result struct {
	dec     *Decision
	err     error
	latency time.Duration
}

// start calls e's interceptor on ev under e's timeout.
func (c *Chain) start(ctx context.Context, e *entry, ev *events.Event) *pending {
	// The latency counts from the instant the timeout does: a call that
	// times out is never recorded as faster than its timeout, even when
	// this goroutine is preempted here.
	start := time.Now()
	cctx, cancel := context.WithDeadline(ctx, start.Add(e.reg.Timeout))
	deadline, _ := cctx.Deadline()
	p := &pending{e: e, ctx: cctx, cancel: cancel, done: make(chan struct{}), start: start}
	p.req = Request{Stage: ev.Stage, Event: ev, Registration: e.reg, Deadline: deadline}
	go p.call()
	return p
}

func (p *pending) call() {
	returned := false
	defer func() {
		if v := recover(); v != nil {
			p.res = result{err: recovered(v)}
		} else if !returned {
			p.res = result{err: recovered("runtime.Goexit")} // e.g. t.FailNow in a handler
		}
		close(p.done)
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
