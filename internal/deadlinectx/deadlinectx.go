package deadlinectx

import (
	"context"
	"sync"
	"time"
)

// Context is a context.Context that ends at its deadline, when its parent
// ends, or when it is canceled, as context.WithDeadline's does: Deadline
// is the earlier of its own and its parent's, Err is nil until then and
// context.DeadlineExceeded or the parent's error or context.Canceled after,
// and Done is closed when Err turns non-nil. Unlike WithDeadline's, the
// timer (and the hook on the parent) is set up only by the first call of
// Done; until then Err compares the deadline with the clock.
//
// Make it with New and end it with Cancel once the work it bounds is done.
// It is safe for concurrent use.
type Context struct {
	parent   context.Context
	deadline time.Time

	mu         sync.Mutex
	done       chan struct{}   // made by Done
	err        error           // set once ended
	timer      *time.Timer     // armed by Done
	stopParent func() bool     // set by Done for a parent that can end
	wake       chan<- struct{} // set by Watch: told when the context ends
}

// New returns a context of parent that ends at deadline (or earlier, with
// parent). Nothing is armed until Done is called.
func New(parent context.Context, deadline time.Time) *Context {
	c := new(Context)
	Init(c, parent, deadline)
	return c
}

// Init makes c, a zero Context inside a caller's struct (one allocation for
// both), what New(parent, deadline) returns. A Context is initialised once
// and never reused.
func Init(c *Context, parent context.Context, deadline time.Time) {
	if d, ok := parent.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c.parent, c.deadline = parent, deadline
}

// Deadline returns the deadline (true).
func (c *Context) Deadline() (time.Time, bool) { return c.deadline, true }

// Value returns the parent's value of key.
func (c *Context) Value(key any) any { return c.parent.Value(key) }

// Err returns nil while the context runs, then why it ended: the parent's
// error, context.DeadlineExceeded, or context.Canceled.
func (c *Context) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.check()
}

// check ends the context if its parent ended or its deadline passed, and
// returns its error. c.mu is held.
func (c *Context) check() error {
	if c.err != nil {
		return c.err
	}
	if err := c.parent.Err(); err != nil {
		c.endLocked(err)
	} else if !time.Now().Before(c.deadline) {
		c.endLocked(context.DeadlineExceeded)
	}
	return c.err
}

// Done returns a channel closed when the context ends. The first call arms
// the deadline's timer and follows the parent.
func (c *Context) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil {
		return c.done
	}
	c.done = make(chan struct{})
	if c.err != nil {
		close(c.done) // ended before anything waited
		return c.done
	}
	if c.check() != nil {
		return c.done // closed by endLocked
	}
	c.timer = time.AfterFunc(time.Until(c.deadline), func() { c.end(context.DeadlineExceeded) })
	if c.parent.Done() != nil {
		c.stopParent = context.AfterFunc(c.parent, func() { c.end(c.parent.Err()) })
	}
	return c.done
}

// Watch lets a waiter wait for the context's end without arming it: it
// returns the parent's Done channel (nil for a parent that never ends) and
// the deadline, and from now on the context sends on wake, without
// blocking, when it ends (Cancel). The waiter selects on the parent's
// channel, a timer of its own for the deadline and wake, and asks Err
// when one of them fires. ok is false when Done has been called already
// (wait on Done: it is armed) or the context has ended; one watch at a
// time. End the watch with Unwatch.
func (c *Context) Watch(wake chan<- struct{}) (parentDone <-chan struct{}, deadline time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil || c.err != nil || c.wake != nil {
		return nil, time.Time{}, false
	}
	c.wake = wake
	return c.parent.Done(), c.deadline, true
}

// Unwatch ends Watch: the context no longer sends on its channel.
func (c *Context) Unwatch() {
	c.mu.Lock()
	c.wake = nil
	c.mu.Unlock()
}

// Cancel ends the context with context.Canceled (when it has not ended
// yet) and releases its timer. It is idempotent.
func (c *Context) Cancel() { c.end(context.Canceled) }

func (c *Context) end(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.endLocked(err)
}

// endLocked ends the context with err unless it already ended, and
// releases the timer and the hook on the parent. c.mu is held.
func (c *Context) endLocked(err error) {
	if c.err == nil {
		c.err = err
		if c.done != nil {
			close(c.done)
		}
		if c.wake != nil {
			select {
			case c.wake <- struct{}{}:
			default: // a full channel wakes the waiter already
			}
		}
	}
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if c.stopParent != nil {
		c.stopParent()
		c.stopParent = nil
	}
}

// String names the context for debugging, as the context package's do.
func (c *Context) String() string {
	return "deadlinectx.WithDeadline(" + c.deadline.String() + ")"
}
