package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
)

// denials records the permission violations the server reports on a
// connection. NATS reports a refused publish asynchronously, so a request
// to a subject the user may not publish to would otherwise only time out;
// Guard ends such a wait at the refusal instead.
type denials struct {
	mu      sync.Mutex
	first   error
	cancels map[int]context.CancelCauseFunc
	next    int
}

// handler is the connection's nats.ErrorHandler: it records permission
// violations and logs every asynchronous error at debug level (warnings
// print by default; these are part of an error the command reports).
func (d *denials) handler(log *slog.Logger) nats.ErrHandler {
	return func(_ *nats.Conn, sub *nats.Subscription, err error) {
		if !errors.Is(err, nats.ErrPermissionViolation) {
			log.Debug("hookbus: asynchronous NATS error", "err", err)
			return
		}
		log.Debug("hookbus: permission denied", "err", err)
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.first == nil {
			d.first = err
		}
		for _, cancel := range d.cancels {
			cancel(fmt.Errorf("%w: %s", ErrPermission, violation(err)))
		}
	}
}

// violation is the server's words, without nats.go's prefix.
func violation(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, nats.ErrPermissionViolation.Error()+": "); i >= 0 {
		s = s[i+len(nats.ErrPermissionViolation.Error())+2:]
	}
	return s
}

// Guard returns a ctx that ends when the server refuses something of this
// connection (a permission violation), and a func to release it. Pair it
// with Explain.
func (c *Conn) Guard(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	d := c.denied
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.first != nil {
		cancel(fmt.Errorf("%w: %s", ErrPermission, violation(d.first)))
		return ctx, func() { cancel(nil) }
	}
	if d.cancels == nil {
		d.cancels = map[int]context.CancelCauseFunc{}
	}
	id := d.next
	d.next++
	d.cancels[id] = cancel
	return ctx, func() {
		d.mu.Lock()
		delete(d.cancels, id)
		d.mu.Unlock()
		cancel(nil)
	}
}

// OpenGuarded is Open, then Guard on the connection: it returns the
// connection, the guarded ctx, and a func that releases the guard and
// closes the connection.
func (c *ConnFlags) OpenGuarded(ctx context.Context, name string, logger *slog.Logger, mode Mode) (*Conn, context.Context, func(), error) {
	conn, err := c.Open(ctx, name, logger, mode)
	if err != nil {
		return nil, nil, nil, err
	}
	gctx, stop := conn.Guard(ctx)
	return conn, gctx, func() {
		stop()
		conn.Close()
	}, nil
}

// Explain returns err, or, when the server refused something of this
// connection, an error wrapping ErrPermission and err that names what the
// server refused, then what err says (the wait that err reports ended at
// the refusal, so its "context canceled" is left out).
func (c *Conn) Explain(err error) error {
	if err == nil || c == nil || c.denied == nil {
		return err
	}
	c.denied.mu.Lock()
	first := c.denied.first
	c.denied.mu.Unlock()
	if first == nil {
		return err
	}
	return &deniedError{violation: violation(first), err: err}
}

type deniedError struct {
	violation string
	err       error
}

func (e *deniedError) Error() string {
	what := strings.ReplaceAll(e.err.Error(), ": "+context.Canceled.Error(), "")
	if what == context.Canceled.Error() {
		what = ""
	} else {
		what = ", so: " + what
	}
	return fmt.Sprintf("%v: %s%s (the connection's user lacks the permission; deploy/nats/README.md lists what each user may do)", ErrPermission, e.violation, what)
}

func (e *deniedError) Unwrap() []error { return []error{ErrPermission, e.err} }
