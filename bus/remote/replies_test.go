package remote_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/internal/deadlinectx"
	"github.com/nats-io/nats.go"
)

// serveHanging serves plugin with an interceptor that never answers: it
// sends on got when a request arrives and returns only when the test ends.
func (env *remoteEnv) serveHanging(t *testing.T, plugin string) <-chan struct{} {
	t.Helper()
	got, end := make(chan struct{}, 8), make(chan struct{})
	env.serve(t, plugin, events.StageToolBefore, func(ctx context.Context, _ *interceptors.Request) (*interceptors.Decision, error) {
		got <- struct{}{}
		<-end
		return nil, nil
	})
	t.Cleanup(func() { close(end) }) // before the service stops
	return got
}

// returnsSoon fails the test unless done is closed long before the calls'
// MaxTimeout.
func returnsSoon(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(interceptors.MaxTimeout / 2):
		t.Fatalf("%s waited out the call's timeout", what)
	}
}

// TestRemoteCanceledRun: a run whose ctx is canceled while its remote
// interceptor has not answered ends then, for a mutating interceptor
// (called on the chain's goroutine) and a validating one (on a worker),
// not at the call's timeout.
func TestRemoteCanceledRun(t *testing.T) {
	for _, mode := range []interceptors.Mode{interceptors.ModeMutate, interceptors.ModeValidate} {
		t.Run(string(mode), func(t *testing.T) {
			env := newRemoteEnv(t)
			got := env.serveHanging(t, "hangs")
			chain := interceptors.NewChain()
			reg := interceptors.Registration{Plugin: "hangs", Stage: events.StageToolBefore, Mode: mode, Timeout: interceptors.MaxTimeout}
			if _, err := remote.Register(env.client, chain, reg); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan struct{})
			var err error
			go func() {
				defer close(done)
				_, err = chain.Run(ctx, toolBefore(t))
			}()
			<-got
			cancel()
			returnsSoon(t, done, "a canceled run")
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Run: %v, want an error wrapping context.Canceled", err)
			}
		})
	}
}

// TestRemoteCallCanceled: a call whose own ctx (the chain's kind, waited
// on without arming it) is canceled returns then, with ctx's error.
func TestRemoteCallCanceled(t *testing.T) {
	env := newRemoteEnv(t)
	got := env.serveHanging(t, "hangs")
	r := env.remote(t, interceptors.Registration{Plugin: "hangs", Stage: events.StageToolBefore, Timeout: interceptors.MaxTimeout})
	dc := deadlinectx.New(context.Background(), time.Now().Add(interceptors.MaxTimeout))
	dl, _ := dc.Deadline()
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		_, err = r.Intercept(dc, &interceptors.Request{Stage: events.StageToolBefore, Event: toolBefore(t), Deadline: dl})
	}()
	<-got
	dc.Cancel()
	returnsSoon(t, done, "a canceled call")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Intercept: %v, want an error wrapping context.Canceled", err)
	}
}

// TestRemoteCallTimesOutWatched: a call on the chain's kind of ctx times
// out at its deadline (the waiter's own timer) as a timeout.
func TestRemoteCallTimesOutWatched(t *testing.T) {
	env := newRemoteEnv(t)
	got := env.serveHanging(t, "hangs")
	r := env.remote(t, interceptors.Registration{Plugin: "hangs", Stage: events.StageToolBefore})
	start := time.Now()
	dc := deadlinectx.New(context.Background(), start.Add(100*time.Millisecond))
	defer dc.Cancel()
	dl, _ := dc.Deadline()
	_, err := r.Intercept(dc, &interceptors.Request{Stage: events.StageToolBefore, Event: toolBefore(t), Deadline: dl})
	wantHookError(t, err, events.FailTimeout, interceptors.ErrTimeout, "hangs")
	if !time.Now().After(dl) {
		t.Fatalf("timed out at %s, before the deadline %s", time.Now(), dl)
	}
	<-got
}

// TestRemoteConnectionClosed: a call waiting when the client's connection
// closes fails then, not at its deadline, and later calls fail at once.
func TestRemoteConnectionClosed(t *testing.T) {
	env := newRemoteEnv(t)
	got := env.serveHanging(t, "hangs")
	r := env.remote(t, interceptors.Registration{Plugin: "hangs", Stage: events.StageToolBefore, Timeout: interceptors.MaxTimeout})
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		_, err = call(r, toolBefore(t), interceptors.MaxTimeout)
	}()
	<-got
	env.client.Conn().Close()
	returnsSoon(t, done, "a call on a closed connection")
	wantHookError(t, err, events.FailError, interceptors.ErrHookError, "closed")
	if !errors.Is(err, nats.ErrConnectionClosed) {
		t.Fatalf("error %v does not wrap nats.ErrConnectionClosed", err)
	}
	_, err = call(r, toolBefore(t), interceptors.MaxTimeout)
	if !errors.Is(err, nats.ErrConnectionClosed) {
		t.Fatalf("a call after the close: %v, want nats.ErrConnectionClosed", err)
	}
}

// TestRemoteConcurrentCalls: many calls of one Client in flight at once
// each get their own reply.
func TestRemoteConcurrentCalls(t *testing.T) {
	env := newRemoteEnv(t)
	env.serve(t, "echo", events.StageToolBefore, func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
		return &interceptors.Decision{Kind: interceptors.Deny, Reason: req.Event.ID}, nil
	})
	r := env.remote(t, interceptors.Registration{Plugin: "echo", Stage: events.StageToolBefore})
	const n = 64
	errs := make(chan error, n)
	for range n {
		go func() {
			ev := toolBefore(t)
			d, err := call(r, ev, interceptors.MaxTimeout)
			switch {
			case err != nil:
				errs <- err
			case d == nil || d.Reason != ev.ID:
				errs <- errors.New("the reply of another call: " + ev.ID)
			default:
				errs <- nil
			}
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// A stranger who may read every reply on the inbox (a subscriber to
// _INBOX.>) learns nothing of the next call's reply subject from the last
// one's: a reply forged on the subject that would come next is not taken
// for the call's answer.
func TestRemoteReplySubjectNotGuessed(t *testing.T) {
	env := newRemoteEnv(t)
	stranger := bustest.Conn(t, env.srv)
	seen := make(chan string, 8)
	if _, err := stranger.Subscribe("_INBOX.>", func(m *nats.Msg) {
		select {
		case seen <- m.Subject:
		default:
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := stranger.Flush(); err != nil {
		t.Fatal(err)
	}
	var guess atomic.Value // the subject the stranger forges a reply on
	env.serve(t, "echo", events.StageToolBefore, func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
		if s, ok := guess.Load().(string); ok {
			if err := stranger.Publish(s, []byte(`{"kind":"allow","reason":"forged"}`)); err != nil {
				return nil, err
			}
			if err := stranger.Flush(); err != nil {
				return nil, err
			}
		}
		return &interceptors.Decision{Kind: interceptors.Deny, Reason: req.Event.ID}, nil
	})
	r := env.remote(t, interceptors.Registration{Plugin: "echo", Stage: events.StageToolBefore})
	if _, err := call(r, toolBefore(t), interceptors.MaxTimeout); err != nil {
		t.Fatal(err)
	}
	var first string
	select {
	case first = <-seen:
	case <-time.After(10 * time.Second):
		t.Fatal("the stranger saw no reply")
	}
	dot := strings.LastIndexByte(first, '.')
	n, err := strconv.ParseUint(first[dot+1:], 36, 64)
	if err != nil {
		t.Fatalf("reply subject %q: %v", first, err)
	}
	guess.Store(first[:dot+1] + strconv.FormatUint(n+1, 36))
	for range 20 {
		ev := toolBefore(t)
		d, err := call(r, ev, interceptors.MaxTimeout)
		if err != nil || d == nil || d.Kind != interceptors.Deny || d.Reason != ev.ID {
			t.Fatalf("call answered %+v, %v: want the service's own deny", d, err)
		}
	}
}
