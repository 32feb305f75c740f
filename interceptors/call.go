package interceptors

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/internal/deadlinectx"
)

// pending is one interceptor call in flight. The call runs on a goroutine
// other than the chain's, so that the timeout holds even when the
// interceptor ignores ctx: the pending's worker, a goroutine parked between
// calls and pooled with it. The worker writes only res and then signals
// wake; the waiter reads res only after that signal, and an abandoned
// call's pending is dropped (never pooled again), so a late answer cannot
// reach shared state.
//
// A mutating ContextBound interceptor is called on the chain's goroutine
// instead (callBound): it returns once its ctx ends, so the timeout holds
// without a goroutine, and nothing is ever abandoned.
//
// A pending is pooled with its worker, its channels and its timer; what
// the interceptor sees (its ctx and its Request, which it
// may keep) is made per call, in one allocation.
//
// The waiter waits on one channel, wake: the worker sends true when the
// call returned, the timer false when it fires. The timer is left armed
// between calls and reset only when it would fire after the call's deadline
// or has fired already, so a call that answers within its timeout costs no
// timer operation; a tick that comes early (armed for an earlier call, or
// left over from one) wakes the waiter, which arms it again for its own
// deadline. The timer's sends do not block and it has at most one fire
// outstanding; a call starts with at most one tick left in wake (one that
// came after the last call's answer); the waiter drains wake whenever it
// wakes. So wake, which holds three, always has room for the worker's one
// send, even for a call nobody waits on any more (abandoned, or left when
// the run's ctx ended while validators ran).
type pending struct {
	e     *entry
	cs    *callState
	start time.Time
	wake  chan bool          // true: the call returned; false: a tick of alarm
	alarm *deadlinectx.Alarm // sends false on wake when it fires
	work  chan *pending      // the worker's calls
	res   result
	// abandoned is set when the waiter gave up on the call (its deadline or
	// the chain's ctx passed first): the pending stays with its worker.
	abandoned bool
	// exited is set when the call ended its goroutine (runtime.Goexit):
	// the worker is gone, so the pending is not pooled again.
	exited bool
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
// running the chain rather than on a worker goroutine: the call's timeout
// still holds (the call returns at its ctx's deadline and is recorded as a
// timeout as any other), a panic is still recovered and recorded, and no
// call is ever abandoned; it saves two goroutine switches per call.
// Validating interceptors still run on workers, in parallel. An interceptor that breaks the promise holds the
// chain up past its timeout: implement ContextBound only when it holds.
type ContextBound interface {
	Interceptor
	// BoundByContext marks the promise; the chain never calls it.
	BoundByContext()
}

var pendings = sync.Pool{New: func() any {
	p := &pending{wake: make(chan bool, 3), work: make(chan *pending, 1)}
	p.alarm = deadlinectx.NewAlarm(p.wake, false)
	go work(p.work)
	// The worker holds the channel, not p: once p is dropped (by the pool,
	// or abandoned and its call returned), the worker ends.
	runtime.AddCleanup(p, func(w chan *pending) { close(w) }, p.work)
	return p
}}

// work is a pending's worker: it runs the calls sent on w, one at a time,
// until w is closed.
func work(w <-chan *pending) {
	for p := range w {
		p.runAndSignal()
	}
}

// runAndSignal runs the call, then sends true on wake.
func (p *pending) runAndSignal() {
	defer func() { p.wake <- true }() // last: the waiter may reuse p at once
	p.run()
}

// newPending prepares a call of e's interceptor on ev under e's timeout,
// giving the interceptor cs (a new one when nil) and the run's memo.
func newPending(ctx context.Context, e *entry, ev *events.Event, cs *callState, memo *Memo) *pending {
	p := pendings.Get().(*pending)
	p.prepare(ctx, e, ev, cs, memo)
	return p
}

// prepare sets p up for a call of e's interceptor on ev under e's timeout.
func (p *pending) prepare(ctx context.Context, e *entry, ev *events.Event, cs *callState, memo *Memo) {
	// The latency counts from the instant the timeout does: a call that
	// times out is never recorded as faster than its timeout, even when
	// this goroutine is preempted here.
	p.start = time.Now()
	p.e = e
	if cs == nil {
		cs = &callState{}
	}
	p.cs = cs
	deadlinectx.Init(&p.cs.ctx, ctx, p.start.Add(e.reg.Timeout))
	deadline, _ := p.cs.ctx.Deadline()
	p.cs.req = Request{Stage: ev.Stage, Event: ev, Registration: e.reg, Deadline: deadline, Memo: memo}
}

// release puts p back in the pool once the chain is done with it; an
// abandoned call's pending stays with its worker, and one whose call ended
// the worker is dropped.
func (p *pending) release() {
	if p.abandoned || p.exited {
		return
	}
	*p = pending{wake: p.wake, alarm: p.alarm, work: p.work}
	pendings.Put(p)
}

// cancel ends the call's ctx.
func (p *pending) cancel() { p.cs.ctx.Cancel() }

// start calls e's interceptor on ev under e's timeout, on the pending's
// worker.
func (c *Chain) start(ctx context.Context, e *entry, ev *events.Event, cs *callState, memo *Memo) *pending {
	p := newPending(ctx, e, ev, cs, memo)
	p.work <- p
	return p
}

// callBound calls e's ContextBound interceptor on ev under e's timeout, on
// this goroutine, and returns what wait would: a call that failed once its
// deadline (or ctx) passed is a timeout; an answer wins.
func (c *Chain) callBound(ctx context.Context, e *entry, ev *events.Event, cs *callState, memo *Memo) (*pending, result) {
	p := newPending(ctx, e, ev, cs, memo)
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
// runtime.Goexit, on a worker) into an error.
func (p *pending) run() {
	returned := false
	defer func() {
		if v := recover(); v != nil {
			p.res = result{err: recovered(v)}
		} else if !returned {
			p.res = result{err: recovered("runtime.Goexit")} // e.g. t.FailNow in a handler
			p.exited = true
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
	deadline := p.cs.req.Deadline
	p.alarm.Arm(deadline, p.start)
	ended := ctx.Done()
	for {
		var returned bool
		if ended == nil {
			returned = <-p.wake
		} else {
			select {
			case returned = <-p.wake:
			case <-ended:
			}
		}
		if returned || p.drain() {
			r := p.res
			r.latency = time.Since(p.start)
			return r
		}
		// The call's ctx ends with the chain's or at the deadline; its
		// error, taken before the cancel, says which.
		if err := p.cs.ctx.Err(); err != nil {
			p.abandoned = true
			return result{err: timeoutError(&p.e.reg, err), latency: time.Since(p.start)}
		}
		p.alarm.Arm(deadline, time.Now()) // an early tick: wait on
	}
}

// drain empties wake and reports whether the call returned.
func (p *pending) drain() bool {
	returned := false
	for {
		select {
		case r := <-p.wake:
			returned = returned || r
		default:
			return returned
		}
	}
}
