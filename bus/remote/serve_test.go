package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// request sends a raw request and returns the reply.
func request(t *testing.T, nc *nats.Conn, subj string, h nats.Header, body []byte) *nats.Msg {
	t.Helper()
	reply, err := nc.RequestMsgWithContext(testCtx(t), &nats.Msg{Subject: subj, Header: h, Data: body})
	if err != nil {
		t.Fatalf("request %s: %v", subj, err)
	}
	return reply
}

func wantServiceError(t *testing.T, reply *nats.Msg, code, text string) {
	t.Helper()
	if got := reply.Header.Get(micro.ErrorCodeHeader); got != code {
		t.Fatalf("error code %q (description %q), want %s", got, reply.Header.Get(micro.ErrorHeader), code)
	}
	if desc := reply.Header.Get(micro.ErrorHeader); !strings.Contains(desc, text) {
		t.Fatalf("error description %q does not say %q", desc, text)
	}
}

func encoded(t *testing.T, e *events.Event) (nats.Header, []byte) {
	t.Helper()
	h, body, err := events.Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	return nats.Header(h), body
}

// TestServeMalformedRequest: a request the service cannot read gets an
// error reply 400 naming the problem; the interceptor is not called.
func TestServeMalformedRequest(t *testing.T) {
	env := newRemoteEnv(t)
	var calls atomic.Int32
	env.serve(t, "strict", events.StageToolBefore, func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		calls.Add(1)
		return nil, nil
	})
	const subj = "hookbus.hook.tool.before.strict"
	nc := env.client.Conn()

	wantServiceError(t, request(t, nc, subj, nil, []byte("not an event")), "400", "malformed request")

	h, body := encoded(t, testEvent(t, "a", "s", events.NewID(), events.StageIntake, 1))
	wantServiceError(t, request(t, nc, subj, h, body), "400", "a intake event sent to the tool.before endpoint")

	h, body = encoded(t, toolBefore(t))
	h.Set("ce-type", "hookbus.nope")
	wantServiceError(t, request(t, nc, subj, h, body), "400", "malformed request")

	h, body = encoded(t, toolBefore(t))
	h.Set(remote.HeaderDeadline, "tomorrow")
	wantServiceError(t, request(t, nc, subj, h, body), "400", `header Hookbus-Deadline "tomorrow" is not an RFC 3339 time`)

	h, body = encoded(t, toolBefore(t))
	h.Set(remote.HeaderTimeoutMs, "-5")
	wantServiceError(t, request(t, nc, subj, h, body), "400", "Hookbus-Timeout-Ms")

	h, body = encoded(t, toolBefore(t))
	h.Set(remote.HeaderDeadline, time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano))
	wantServiceError(t, request(t, nc, subj, h, body), "504", "passed before the request was handled")

	if n := calls.Load(); n != 0 {
		t.Fatalf("the interceptor was called %d times on malformed requests", n)
	}
	// A well-formed request without deadline headers (e.g. from the nats
	// CLI) gets the default budget and an answer.
	h, body = encoded(t, toolBefore(t))
	if reply := request(t, nc, subj, h, body); len(reply.Header) != 0 || len(reply.Data) != 0 {
		t.Fatalf("reply %v %q, want an empty allow", reply.Header, reply.Data)
	}
	// micro counts a request after its handler returned, so after the reply.
	var st micro.EndpointStats
	bustest.Eventuallyf(t, 5*time.Second, func() bool {
		st = env.serveStats(t, "strict")
		return st.NumRequests == 7
	}, "7 requests counted")
	if st.NumErrors != 6 {
		t.Fatalf("stats: %d requests, %d errors; want 7 and 6", st.NumRequests, st.NumErrors)
	}
}

func (env *remoteEnv) serveStats(t *testing.T, plugin string) micro.EndpointStats {
	t.Helper()
	reply := request(t, env.client.Conn(), "$SRV.STATS."+plugin, nil, nil)
	var st micro.Stats
	if err := json.Unmarshal(reply.Data, &st); err != nil || len(st.Endpoints) != 1 {
		t.Fatalf("$SRV.STATS.%s: %s (%v)", plugin, reply.Data, err)
	}
	return *st.Endpoints[0]
}

// TestServeDeadline: the handler's ctx and Request.Deadline are the
// request's receipt plus its budget (Hookbus-Timeout-Ms), whatever
// Hookbus-Deadline says: a service whose clock is ahead of or behind the
// loop's still gets the whole budget. Hookbus-Deadline counts only without
// a budget.
func TestServeDeadline(t *testing.T) {
	env := newRemoteEnv(t)
	type seen struct {
		req, ctx time.Time
		reg      interceptors.Registration
	}
	got := make(chan seen, 1)
	env.serve(t, "clock", events.StageToolBefore, func(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
		dl, _ := ctx.Deadline()
		got <- seen{req.Deadline, dl, req.Registration}
		return nil, nil
	})
	const subj = "hookbus.hook.tool.before.clock"
	far := time.Now().Add(time.Hour).UTC()
	for _, tc := range []struct {
		name             string
		deadline, budget string
		lo, hi           time.Duration // from the request
	}{
		{"deadline only", far.Format(time.RFC3339Nano), "", time.Hour - time.Minute, time.Hour},
		{"budget only", "", "1500", time.Second, 1500 * time.Millisecond},
		{"budget earlier", far.Format(time.RFC3339Nano), "1500", time.Second, 1500 * time.Millisecond},
		{"clock behind the loop's", time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano), "1500", time.Second, 1500 * time.Millisecond},
		{"clock ahead of the loop's", far.Format(time.RFC3339Nano), "40000", 39 * time.Second, 40 * time.Second},
		{"neither", "", "", interceptors.DefaultTimeout - time.Second, interceptors.DefaultTimeout},
	} {
		h, body := encoded(t, toolBefore(t))
		if tc.deadline != "" {
			h.Set(remote.HeaderDeadline, tc.deadline)
		}
		if tc.budget != "" {
			h.Set(remote.HeaderTimeoutMs, tc.budget)
		}
		start := time.Now()
		request(t, env.client.Conn(), subj, h, body)
		s := <-got
		if !s.req.Equal(s.ctx) || s.req.Before(start.Add(tc.lo)) || s.req.After(time.Now().Add(tc.hi)) {
			t.Errorf("%s: request deadline %v, ctx deadline %v; want them equal, %s to %s from the request", tc.name, s.req, s.ctx, tc.lo, tc.hi)
		}
		if s.reg.Plugin != "clock" || s.reg.Stage != events.StageToolBefore || !s.reg.Remote {
			t.Errorf("%s: request registration %+v", tc.name, s.reg)
		}
	}
}

// TestServeQueueGroup: two instances of one plugin share its requests.
func TestServeQueueGroup(t *testing.T) {
	env := newRemoteEnv(t)
	var a, b atomic.Int32
	count := func(n *atomic.Int32) interceptors.Func {
		return func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			n.Add(1)
			return nil, nil
		}
	}
	env.serve(t, "shared", events.StageToolBefore, count(&a))
	// The second instance on its own connection, as another process would.
	svc, err := remote.Serve(context.Background(), bustest.Conn(t, env.srv), remote.ServeConfig{Plugin: "shared", Stages: []events.Stage{events.StageToolBefore}}, count(&b))
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	r := env.remote(t, interceptors.Registration{Plugin: "shared", Stage: events.StageToolBefore})
	deadline := time.Now().Add(10 * time.Second)
	sent := 0
	for a.Load() == 0 || b.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after %d requests: instance a got %d, b got %d; want both some", sent, a.Load(), b.Load())
		}
		if _, err := call(r, toolBefore(t), 5*time.Second); err != nil {
			t.Fatal(err)
		}
		sent++
	}
	if got := int(a.Load() + b.Load()); got != sent {
		t.Fatalf("%d requests answered %d times: a queue group delivers each request once", sent, got)
	}
}

// TestServeDiscovery: $SRV.PING and $SRV.INFO find the service, its
// endpoints, subjects and queue group.
func TestServeDiscovery(t *testing.T) {
	env := newRemoteEnv(t)
	svc, err := remote.Serve(context.Background(), env.svcNC, remote.ServeConfig{
		Plugin: "pii", Stages: []events.Stage{events.StageToolBefore, events.StageToolAfter},
		Version: "1.2.3", Description: "redacts secrets", Metadata: map[string]string{"team": "sec"},
	}, interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) { return nil, nil }))
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	nc := env.client.Conn()
	var ping micro.Ping
	if err := json.Unmarshal(request(t, nc, "$SRV.PING.pii", nil, nil).Data, &ping); err != nil || ping.Name != "pii" || ping.Version != "1.2.3" {
		t.Fatalf("$SRV.PING.pii: %+v (%v)", ping, err)
	}
	var info micro.Info
	if err := json.Unmarshal(request(t, nc, "$SRV.INFO.pii", nil, nil).Data, &info); err != nil {
		t.Fatal(err)
	}
	if info.Name != "pii" || info.Description != "redacts secrets" || info.Metadata["team"] != "sec" ||
		info.Metadata["hookbus.protocol"] != "1" || info.Metadata["hookbus.prefix"] != "hookbus" || len(info.Endpoints) != 2 {
		t.Fatalf("$SRV.INFO.pii: %+v", info)
	}
	for i, want := range []struct{ name, subject, stage string }{
		{"tool_before", "hookbus.hook.tool.before.pii", "tool.before"},
		{"tool_after", "hookbus.hook.tool.after.pii", "tool.after"},
	} {
		ep := info.Endpoints[i]
		if ep.Name != want.name || ep.Subject != want.subject || ep.QueueGroup != "pii" || ep.Metadata["hookbus.stage"] != want.stage {
			t.Errorf("endpoint %d: %+v, want %+v with queue group pii", i, ep, want)
		}
	}
	if got := svc.Micro().Info().Name; got != "pii" {
		t.Fatalf("Micro().Info().Name %q", got)
	}
}

func TestServeValidates(t *testing.T) {
	env := newRemoteEnv(t)
	allow := interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) { return nil, nil })
	tb := []events.Stage{events.StageToolBefore}
	for _, tc := range []struct {
		name string
		cfg  remote.ServeConfig
		ic   interceptors.Interceptor
		want string
	}{
		{"no plugin", remote.ServeConfig{Stages: tb}, allow, "plugin id is empty"},
		{"not a subject token", remote.ServeConfig{Plugin: "a.b", Stages: tb}, allow, `plugin id "a.b"`},
		{"not a service name", remote.ServeConfig{Plugin: "pii@v2", Stages: tb}, allow, `plugin id "pii@v2" cannot be a micro service name`},
		{"no stages", remote.ServeConfig{Plugin: "p"}, allow, "no stages"},
		{"observe-only", remote.ServeConfig{Plugin: "p", Stages: []events.Stage{events.StageRunCompleted}}, allow, "run.completed is observe-only"},
		{"unknown stage", remote.ServeConfig{Plugin: "p", Stages: []events.Stage{"tool.nope"}}, allow, `"tool.nope" is not a hookbus stage`},
		{"twice", remote.ServeConfig{Plugin: "p", Stages: []events.Stage{events.StageIntake, events.StageIntake}}, allow, "intake listed twice"},
		{"bad version", remote.ServeConfig{Plugin: "p", Stages: tb, Version: "one"}, allow, "version"},
		{"bad prefix", remote.ServeConfig{Plugin: "p", Stages: tb, Prefix: "a b"}, allow, "prefix"},
		{"nil interceptor", remote.ServeConfig{Plugin: "p", Stages: tb}, nil, "nil interceptor"},
	} {
		_, err := remote.Serve(context.Background(), env.svcNC, tc.cfg, tc.ic)
		if !errors.Is(err, bus.ErrInvalidOption) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalidOption saying %q", tc.name, err, tc.want)
		}
	}
}

// TestServeStopsWithContext: the service stops when its ctx ends; then
// nobody answers.
func TestServeStopsWithContext(t *testing.T) {
	env := newRemoteEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	svc, err := remote.Serve(ctx, env.svcNC, remote.ServeConfig{Plugin: "short", Stages: []events.Stage{events.StageIntake}},
		interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) { return nil, nil }))
	if err != nil {
		t.Fatal(err)
	}
	r := env.remote(t, interceptors.Registration{Plugin: "short", Stage: events.StageIntake})
	ev := testEvent(t, "a", "s", events.NewID(), events.StageIntake, 1)
	if _, err := call(r, ev, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	cancel()
	bustest.Eventuallyf(t, 5*time.Second, svc.Stopped, "service stopped")
	bustest.Eventuallyf(t, 5*time.Second, func() bool {
		_, err := call(r, ev, 5*time.Second)
		return errors.Is(err, interceptors.ErrNoResponders)
	}, "no responders after stop")
	if err := svc.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

// TestServeCustomPrefix: the prefix of the service and of the client bus
// agree on the subject.
func TestServeCustomPrefix(t *testing.T) {
	srv, nc := bustest.Start(t)
	client, err := bus.New(bustest.Conn(t, srv), bus.WithPrefix("acme.hb"))
	if err != nil {
		t.Fatal(err)
	}
	svc, err := remote.Serve(context.Background(), nc, remote.ServeConfig{Plugin: "p", Prefix: "acme.hb", Stages: []events.Stage{events.StageToolBefore}},
		interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Deny, Reason: "prefixed"}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	r, err := remote.NewClient(client, interceptors.Registration{Plugin: "p", Stage: events.StageToolBefore})
	if err != nil {
		t.Fatal(err)
	}
	if r.Subject() != "acme.hb.hook.tool.before.p" {
		t.Fatalf("subject %s", r.Subject())
	}
	d, err := call(r, toolBefore(t), 5*time.Second)
	if err != nil || d.Kind != interceptors.Deny || d.Reason != "prefixed" {
		t.Fatalf("decision %+v, err %v", d, err)
	}
}
