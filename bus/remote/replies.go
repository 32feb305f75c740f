package remote

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/hookbus/hookbus/internal/deadlinectx"
	"github.com/nats-io/nats.go"
)

// replies routes the replies to a Client's requests, as nats.go's request
// does: one subscription on <inbox>.* (the connection's inbox prefix),
// made at the first request, and each request's reply subject a random
// token under it. It exists so that a call waits on the run's ctx and a pooled
// timer of its own (see wait) rather than arming the chain's per-call
// context. The subscription ends when the Client is collected, or with the
// connection.
type replies struct {
	nc *nats.Conn

	mu      sync.Mutex
	sub     *nats.Subscription
	prefix  string             // "<inbox>."
	waiting map[string]*waiter // token → its call
	closed  bool               // the subscription ended
}

// waiter is one call waiting for its reply; pooled with its channels and
// alarm.
type waiter struct {
	reply chan *nats.Msg     // the reply; nil once the subscription ended
	wake  chan struct{}      // a tick of alarm, or the call's ctx canceled
	alarm *deadlinectx.Alarm // sends on wake when it fires
}

var waiters = sync.Pool{New: func() any {
	w := &waiter{reply: make(chan *nats.Msg, 1), wake: make(chan struct{}, 1)}
	w.alarm = deadlinectx.NewAlarm(w.wake, struct{}{})
	return w
}}

// request sends msg with a reply subject of its own and returns the reply,
// or ctx's error once ctx ends first; nats.ErrNoResponders when the server
// says nobody serves the subject, nats.ErrConnectionClosed when the
// connection closes first.
func (rs *replies) request(ctx context.Context, msg *nats.Msg) (*nats.Msg, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w := waiters.Get().(*waiter)
	token, err := rs.send(msg, w)
	if err != nil {
		waiters.Put(w)
		return nil, err
	}
	m, err := rs.wait(ctx, w, token)
	if err == nil && m == nil {
		err = nats.ErrConnectionClosed
	}
	waiters.Put(w) // its reply was taken: nothing more is sent on it
	if err == nil && len(m.Data) == 0 && m.Header.Get("Status") == "503" {
		return nil, nats.ErrNoResponders
	}
	return m, err
}

// send registers w under a new token and publishes msg with its reply
// subject.
func (rs *replies) send(msg *nats.Msg, w *waiter) (string, error) {
	rs.mu.Lock()
	if rs.closed {
		rs.mu.Unlock()
		return "", nats.ErrConnectionClosed
	}
	if rs.sub == nil {
		rs.prefix = rs.nc.NewInbox() + "."
		sub, err := rs.nc.Subscribe(rs.prefix+"*", rs.route)
		if err != nil {
			rs.mu.Unlock()
			return "", err
		}
		sub.SetClosedHandler(func(string) { rs.end() })
		rs.sub, rs.waiting = sub, make(map[string]*waiter)
	}
	// A token is random, as nats.go's are: one that a subscriber to the
	// inbox's replies saw tells nothing of the next.
	var buf [64]byte
	subject := string(strconv.AppendUint(append(buf[:0], rs.prefix...), rand.Uint64(), 36)) // one allocation
	token := subject[len(rs.prefix):]
	if _, taken := rs.waiting[token]; taken {
		rs.mu.Unlock()
		return rs.send(msg, w) // a token still waiting drawn again: draw anew
	}
	rs.waiting[token] = w
	rs.mu.Unlock()
	msg.Reply = subject
	err := rs.nc.PublishMsg(msg)
	msg.Reply = ""
	if err != nil && rs.forget(token) {
		return "", err
	}
	return token, nil // an error after a reply came: the reply wins
}

// wait waits for w's reply. A ctx of the chain's (a deadlinectx not yet
// armed) is watched rather than armed: the wait selects on the run's ctx,
// w's timer at the call's deadline and the ctx's cancel.
func (rs *replies) wait(ctx context.Context, w *waiter, token string) (*nats.Msg, error) {
	done := ctx.Done
	var deadline time.Time
	if dc, ok := ctx.(*deadlinectx.Context); ok {
		if pd, dl, ok := dc.Watch(w.wake); ok {
			defer dc.Unwatch()
			done = func() <-chan struct{} { return pd }
			deadline = dl
			w.alarm.Arm(deadline, time.Now())
		}
	}
	ended := done()
	for {
		select {
		case m := <-w.reply:
			return m, nil
		case <-ended:
		case <-w.wake:
		}
		if err := ctx.Err(); err != nil {
			if rs.forget(token) {
				return nil, err
			}
			return <-w.reply, nil // routed meanwhile: it is there already
		}
		if !deadline.IsZero() {
			w.alarm.Arm(deadline, time.Now()) // an early tick
		}
	}
}

// forget removes token's waiter and reports whether it was still waiting
// (no reply routed to it).
func (rs *replies) forget(token string) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	_, ok := rs.waiting[token]
	delete(rs.waiting, token)
	return ok
}

// route hands a reply to its waiter; a reply nobody waits for any more is
// dropped.
func (rs *replies) route(m *nats.Msg) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	token := m.Subject[min(len(rs.prefix), len(m.Subject)):]
	if w, ok := rs.waiting[token]; ok {
		delete(rs.waiting, token)
		w.reply <- m // room for one, and one reply is routed per token
	}
}

// end fails the calls waiting when the subscription ends (the connection
// closed, or the Client was collected).
func (rs *replies) end() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.closed = true
	for token, w := range rs.waiting {
		delete(rs.waiting, token)
		w.reply <- nil
	}
}

// stop ends the subscription.
func (rs *replies) stop() {
	rs.mu.Lock()
	sub := rs.sub
	rs.mu.Unlock()
	if sub != nil {
		_ = sub.Unsubscribe()
	}
}
