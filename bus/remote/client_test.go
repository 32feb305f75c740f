package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/embedded"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/nats-io/nats.go"
)

// remoteEnv is an embedded server with a service connection and a client
// bus on another connection.
type remoteEnv struct {
	srv    *embedded.Server
	svcNC  *nats.Conn
	client *bus.Bus
}

func newRemoteEnv(t *testing.T) *remoteEnv {
	t.Helper()
	srv, nc := bustest.Start(t)
	client, err := bus.New(bustest.Conn(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	return &remoteEnv{srv: srv, svcNC: nc, client: client}
}

// serve serves fn as plugin on stage until the test ends.
func (env *remoteEnv) serve(t *testing.T, plugin string, stage events.Stage, fn interceptors.Func) *remote.Service {
	t.Helper()
	svc, err := remote.Serve(context.Background(), env.svcNC, remote.ServeConfig{Plugin: plugin, Stages: []events.Stage{stage}}, fn)
	if err != nil {
		t.Fatalf("Serve(%s): %v", plugin, err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	return svc
}

func (env *remoteEnv) remote(t *testing.T, reg interceptors.Registration) *remote.Client {
	t.Helper()
	r, err := remote.NewClient(env.client, reg)
	if err != nil {
		t.Fatalf("Remote: %v", err)
	}
	return r
}

// call calls r on ev as the chain would: with the registration's timeout.
func call(r *remote.Client, ev *events.Event, timeout time.Duration) (*interceptors.Decision, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	dl, _ := ctx.Deadline()
	return r.Intercept(ctx, &interceptors.Request{Stage: ev.Stage, Event: ev, Registration: r.Registration(), Deadline: dl})
}

func toolBefore(t testing.TB) *events.Event {
	return testEvent(t, "agent-1", "s1", events.NewID(), events.StageToolBefore, 1)
}

func TestRemoteDecisionsRoundTrip(t *testing.T) {
	env := newRemoteEnv(t)
	patch := []interceptors.PatchOp{{Op: "replace", Path: "/call/arguments/q", Value: json.RawMessage(`"nats"`)}}
	for _, tc := range []struct {
		name string
		dec  *interceptors.Decision
		want *interceptors.Decision // nil: allow as an empty reply
	}{
		{"allow-nil", nil, nil},
		{"allow-bare", &interceptors.Decision{Kind: interceptors.Allow}, nil},
		{"allow-annotated", &interceptors.Decision{Kind: interceptors.Allow, Reason: "fine", Warnings: []string{"w"}, Annotations: map[string]string{"k": "v"}}, nil},
		{"modify-data", &interceptors.Decision{Kind: interceptors.Modify, Data: json.RawMessage(`{"call":{"id":"c1","name":"search","arguments":{"q":"nats"}}}`)}, nil},
		{"modify-patch", &interceptors.Decision{Kind: interceptors.Modify, Patch: patch, Reason: "rewritten"}, nil},
		{"deny", &interceptors.Decision{Kind: interceptors.Deny, Reason: "no searching"}, nil},
		{"mock", interceptors.Mocked("42", false), nil},
		{"ask", &interceptors.Decision{Kind: interceptors.Ask, Reason: "sure?"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want == nil {
				want = tc.dec
			}
			var seen *events.Event
			env.serve(t, tc.name, events.StageToolBefore, func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
				seen = req.Event
				return tc.dec, nil
			})
			r := env.remote(t, interceptors.Registration{Plugin: tc.name, Stage: events.StageToolBefore})
			ev := toolBefore(t)
			got, err := call(r, ev, 5*time.Second)
			if err != nil {
				t.Fatalf("Intercept: %v", err)
			}
			if seen == nil || seen.ID != ev.ID || string(seen.Data) != string(ev.Data) || seen.Subject != ev.Subject || seen.RunID != ev.RunID {
				t.Fatalf("service saw %+v, want the event sent %+v", seen, ev)
			}
			if !sameDecision(got, want) {
				t.Fatalf("decision %+v, want %+v", got, want)
			}
		})
	}
}

// sameDecision compares decisions through their wire form; nil and a bare
// allow are the same.
func sameDecision(a, b *interceptors.Decision) bool {
	norm := func(d *interceptors.Decision) string {
		if d == nil {
			d = &interceptors.Decision{Kind: interceptors.Allow}
		}
		j, _ := json.Marshal(d)
		return string(j)
	}
	return norm(a) == norm(b)
}

// TestRemoteInChain runs remote interceptors in a chain: the outcome is
// the modified payload and the records say remote.
func TestRemoteInChain(t *testing.T) {
	env := newRemoteEnv(t)
	env.serve(t, "rewrite", events.StageToolBefore, func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		return &interceptors.Decision{Kind: interceptors.Modify, Patch: []interceptors.PatchOp{
			{Op: "replace", Path: "/call/arguments/q", Value: json.RawMessage(`"nats"`)},
		}}, nil
	})
	env.serve(t, "guard", events.StageToolBefore, func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
		if !strings.Contains(string(req.Event.Data), `"nats"`) {
			return nil, errors.New("guard saw the payload before the rewrite: " + string(req.Event.Data))
		}
		return &interceptors.Decision{Kind: interceptors.Deny, Reason: "no searching for nats"}, nil
	})
	chain := interceptors.NewChain()
	for _, p := range []string{"rewrite", "guard"} {
		if _, err := remote.Register(env.client, chain, interceptors.Registration{Plugin: p, Stage: events.StageToolBefore}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := chain.Run(testCtx(t), toolBefore(t))
	if err != nil {
		t.Fatal(err)
	}
	if out.Decision != interceptors.Deny || out.Reason != "no searching for nats" || out.Plugin != "guard" {
		t.Fatalf("outcome %s %q by %s, want deny by guard", out.Decision, out.Reason, out.Plugin)
	}
	if len(out.Records) != 2 || !out.Records[0].Remote || !out.Records[1].Remote || out.Records[0].Decision != interceptors.Modify {
		t.Fatalf("records %+v, want a remote modify then a remote deny", out.Records)
	}
	if d := out.Records[0].HookDecided(); !d.Remote || !strings.Contains(string(d.Patch), `"nats"`) {
		t.Fatalf("hook.decided %+v, want remote with the patch", d)
	}
}

// wantHookError checks err is a *HookError of kind matching sentinel whose
// text holds text.
func wantHookError(t *testing.T, err error, kind string, sentinel error, text string) *interceptors.CallError {
	t.Helper()
	var he *interceptors.CallError
	switch {
	case err == nil:
		t.Fatalf("no error, want %s", kind)
	case !errors.As(err, &he):
		t.Fatalf("error %v (%T) is not a *HookError", err, err)
	case he.Kind != kind || !errors.Is(err, sentinel) || interceptors.FailureKind(err) != kind:
		t.Fatalf("error %v: kind %s, want %s matching %v", err, he.Kind, kind, sentinel)
	case !strings.Contains(err.Error(), text):
		t.Fatalf("error %q does not say %q", err, text)
	}
	return he
}

func TestRemoteErrorReply(t *testing.T) {
	env := newRemoteEnv(t)
	env.serve(t, "broken", events.StageToolBefore, func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		return nil, errors.New("database down\nline two")
	})
	r := env.remote(t, interceptors.Registration{Plugin: "broken", Stage: events.StageToolBefore})
	_, err := call(r, toolBefore(t), 5*time.Second)
	wantHookError(t, err, events.FailError, interceptors.ErrHookError, "database down line two")
	var se *remote.ErrorReply
	if !errors.As(err, &se) || se.Code != "500" || se.Description != "database down line two" {
		t.Fatalf("error %v: want a *ServiceError 500 with the interceptor's text on one line", err)
	}
}

func TestRemotePanic(t *testing.T) {
	env := newRemoteEnv(t)
	env.serve(t, "panics", events.StageToolBefore, func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		panic("kaboom")
	})
	r := env.remote(t, interceptors.Registration{Plugin: "panics", Stage: events.StageToolBefore})
	_, err := call(r, toolBefore(t), 5*time.Second)
	wantHookError(t, err, events.FailError, interceptors.ErrHookError, "panic: kaboom")

	// The service survives its handler's panic.
	_, err = call(r, toolBefore(t), 5*time.Second)
	wantHookError(t, err, events.FailError, interceptors.ErrHookError, "panic: kaboom")
}

// TestRemoteNoResponders: nobody serves the subject; the failure comes at
// once, long before the deadline.
func TestRemoteNoResponders(t *testing.T) {
	env := newRemoteEnv(t)
	r := env.remote(t, interceptors.Registration{Plugin: "nobody", Stage: events.StageToolBefore, Timeout: interceptors.MaxTimeout})
	ctx, cancel := context.WithTimeout(context.Background(), interceptors.MaxTimeout)
	defer cancel()
	dl, _ := ctx.Deadline()
	_, err := r.Intercept(ctx, &interceptors.Request{Stage: events.StageToolBefore, Event: toolBefore(t), Deadline: dl})
	if ctx.Err() != nil {
		t.Fatalf("Intercept returned after its %s deadline: no responders must be reported at once", interceptors.MaxTimeout)
	}
	wantHookError(t, err, events.FailNoResponders, interceptors.ErrNoResponders, "hookbus.hook.tool.before.nobody")
	if !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("error %v does not wrap nats.ErrNoResponders", err)
	}
}

func TestRemoteTimeout(t *testing.T) {
	env := newRemoteEnv(t)
	released, end := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(end) })
	env.serve(t, "slow", events.StageToolBefore, func(ctx context.Context, _ *interceptors.Request) (*interceptors.Decision, error) {
		<-ctx.Done() // the service's ctx ends at the request's deadline
		close(released)
		<-end // and the interceptor hangs on
		return &interceptors.Decision{Kind: interceptors.Deny, Reason: "too late"}, nil
	})
	r := env.remote(t, interceptors.Registration{Plugin: "slow", Stage: events.StageToolBefore})
	start := time.Now()
	_, err := call(r, toolBefore(t), 100*time.Millisecond)
	wantHookError(t, err, events.FailTimeout, interceptors.ErrTimeout, "slow")
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("timed out after %s, before the 100ms deadline", d)
	}
	select {
	case <-released:
	case <-time.After(5 * time.Second):
		t.Fatal("the served interceptor's ctx did not end at the request's deadline")
	}
}

// TestRemoteGarbageReply: a raw responder answering something that is not
// a decision is a bad reply that says what is wrong.
func TestRemoteGarbageReply(t *testing.T) {
	env := newRemoteEnv(t)
	for _, tc := range []struct{ plugin, reply, want string }{
		{"garbage", "not json", `"not json"`},
		{"nodecision", `{"reason":"x"}`, "no decision"},
		{"unknown", `{"decision":"maybe"}`, `unknown decision "maybe"`},
	} {
		sub, err := env.svcNC.Subscribe("hookbus.hook.tool.before."+tc.plugin, func(m *nats.Msg) { _ = m.Respond([]byte(tc.reply)) })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Unsubscribe() })
		if err := env.svcNC.Flush(); err != nil {
			t.Fatal(err)
		}
		r := env.remote(t, interceptors.Registration{Plugin: tc.plugin, Stage: events.StageToolBefore})
		_, err = call(r, toolBefore(t), 5*time.Second)
		wantHookError(t, err, events.FailBadReply, interceptors.ErrBadReply, tc.want)
	}
}

// TestRemoteRequestWire checks the request a service receives: the event
// in binary mode and the deadline headers.
func TestRemoteRequestWire(t *testing.T) {
	env := newRemoteEnv(t)
	got := make(chan *nats.Msg, 1)
	sub, err := env.svcNC.Subscribe("hookbus.hook.tool.before.wire", func(m *nats.Msg) {
		got <- m
		_ = m.Respond(nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := env.svcNC.Flush(); err != nil {
		t.Fatal(err)
	}
	r := env.remote(t, interceptors.Registration{Plugin: "wire", Stage: events.StageToolBefore})
	if r.Subject() != "hookbus.hook.tool.before.wire" || !r.Registration().Remote {
		t.Fatalf("subject %s, registration %+v", r.Subject(), r.Registration())
	}
	ev := toolBefore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	dl, _ := ctx.Deadline()
	sent := time.Now()
	if d, err := r.Intercept(ctx, &interceptors.Request{Stage: ev.Stage, Event: ev, Deadline: dl}); err != nil || d != nil {
		t.Fatalf("empty reply: decision %+v, err %v; want allow (nil, nil)", d, err)
	}
	m := <-got
	dec, err := events.Decode(events.Header(m.Header), m.Data)
	if err != nil {
		t.Fatalf("request is not a CloudEvent: %v", err)
	}
	if dec.ID != ev.ID || dec.Stage != ev.Stage || string(dec.Data) != string(ev.Data) || m.Header.Get("ce-type") != "hookbus.tool.before" {
		t.Fatalf("request event %+v, want %+v", dec, ev)
	}
	if m.Header.Get(events.HeaderMsgID) != "" {
		t.Fatal("request carries Nats-Msg-Id")
	}
	hd, err := time.Parse(time.RFC3339Nano, m.Header.Get(remote.HeaderDeadline))
	if err != nil || !hd.Equal(dl) {
		t.Fatalf("%s %q (%v), want %s", remote.HeaderDeadline, m.Header.Get(remote.HeaderDeadline), err, dl.UTC().Format(time.RFC3339Nano))
	}
	var ms int64
	if err := json.Unmarshal([]byte(m.Header.Get(remote.HeaderTimeoutMs)), &ms); err != nil || ms <= 0 || ms > 2000 ||
		time.Duration(ms)*time.Millisecond < dl.Sub(sent)-time.Second {
		t.Fatalf("%s %q: want the remaining budget in ms (<= 2000)", remote.HeaderTimeoutMs, m.Header.Get(remote.HeaderTimeoutMs))
	}
}

func TestRemoteValidates(t *testing.T) {
	env := newRemoteEnv(t)
	for _, reg := range []interceptors.Registration{
		{Plugin: "a.b", Stage: events.StageToolBefore},
		{Plugin: "p", Stage: events.StageRunStarted},
		{Plugin: "p", Stage: "tool.nope"},
		{Plugin: "p", Stage: events.StageToolBefore, Timeout: time.Minute},
	} {
		if _, err := remote.NewClient(env.client, reg); !errors.Is(err, interceptors.ErrInvalidRegistration) {
			t.Errorf("Remote(%+v): %v, want ErrInvalidRegistration", reg, err)
		}
	}
}
