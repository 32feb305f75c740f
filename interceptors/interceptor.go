package interceptors

import (
	"context"
	"time"

	"github.com/hookbus/hookbus/events"
)

// Interceptor decides on one event of a stage. A nil decision with a nil
// error means allow. An error, a panic, not answering before ctx's deadline,
// or a decision the stage does not accept is a failure, handled by the
// registration's policy.
//
// Intercept must not modify req or req.Event: to change the payload, answer
// Modify. The chain stops waiting at the deadline whether or not Intercept
// returns, so an implementation should watch ctx to free its resources.
type Interceptor interface {
	Intercept(ctx context.Context, req *Request) (*Decision, error)
}

// Func adapts a function to an Interceptor.
type Func func(ctx context.Context, req *Request) (*Decision, error)

// Intercept calls f.
func (f Func) Intercept(ctx context.Context, req *Request) (*Decision, error) { return f(ctx, req) }

// BoundFunc is a Func that makes ContextBound's promise: it returns
// promptly once its ctx is done (it does not block, or it waits only on
// what its ctx bounds). A mutating BoundFunc is called on the chain's
// goroutine, without the two goroutine switches that bound a Func. Its
// timeout still holds for what honours ctx, a panic is still recorded; a
// BoundFunc that blocks past its deadline holds the chain up.
type BoundFunc func(ctx context.Context, req *Request) (*Decision, error)

// Intercept calls f.
func (f BoundFunc) Intercept(ctx context.Context, req *Request) (*Decision, error) {
	return f(ctx, req)
}

// BoundByContext marks the promise (ContextBound).
func (BoundFunc) BoundByContext() {}

// Request is one call of an interceptor. It is a struct so that it can grow.
type Request struct {
	// Stage is the stage intercepted (Event.Stage).
	Stage events.Stage
	// Event is the stage's event; its Data is the payload as the earlier
	// interceptors of the chain left it. Read only.
	Event *events.Event
	// Registration is the registration being called, defaults applied.
	Registration Registration
	// Deadline is when the chain stops waiting (the call's ctx deadline);
	// a transport sends the remaining budget with a remote request.
	Deadline time.Time
	// Memo is shared by the calls of one run (nil for a run of one call):
	// a transport may keep what it derived from Event there for the next.
	Memo *Memo
}
