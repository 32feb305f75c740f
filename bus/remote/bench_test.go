package remote_test

import (
	"context"
	"slices"
	"strconv"
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

// The interception benchmarks compare hookbus with raw nats.go on the same
// embedded server, with the same bytes on the wire: a tool.before event in
// binary mode plus the deadline headers, answered with an empty body.
// hookbus: Remote (encode, request, reply check) against a Serve'd micro
// service (decode, call, reply); raw: nc.RequestMsgWithContext of the
// pre-encoded message against an nc.Subscribe responder. Each reports the
// median latency per operation as p50-ns besides ns/op. The ...TCP variants
// connect both sides over TCP loopback instead of in-process.

// benchPlugins are the plugins of the chain benchmarks.
var benchPlugins = []string{"bench-a", "bench-b", "bench-c"}

type interceptEnv struct {
	srv    *embedded.Server
	svcNC  *nats.Conn
	client *bus.Bus
	ev     *events.Event
}

func newInterceptEnv(b *testing.B) *interceptEnv {
	b.Helper()
	srv, nc := bustest.Start(b)
	client, err := bus.New(bustest.Conn(b, srv))
	if err != nil {
		b.Fatal(err)
	}
	return &interceptEnv{srv: srv, svcNC: nc, client: client, ev: toolBefore(b)}
}

// newTCPInterceptEnv is newInterceptEnv with both connections over TCP
// loopback, as a plugin and a loop in other processes would be.
func newTCPInterceptEnv(b *testing.B) *interceptEnv {
	b.Helper()
	srv, _ := bustest.Start(b, bustest.WithListener())
	dial := func() *nats.Conn {
		nc, err := bus.Connect(srv.ClientURL())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(nc.Close)
		return nc
	}
	svcNC := dial()
	client, err := bus.New(dial())
	if err != nil {
		b.Fatal(err)
	}
	return &interceptEnv{srv: srv, svcNC: svcNC, client: client, ev: toolBefore(b)}
}

// serveAllow serves an interceptor that allows, as plugin.
func (env *interceptEnv) serveAllow(b *testing.B, plugin string) {
	b.Helper()
	svc, err := remote.Serve(context.Background(), env.svcNC, remote.ServeConfig{Plugin: plugin, Stages: []events.Stage{events.StageToolBefore}},
		interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) { return nil, nil }))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = svc.Stop() })
}

// rawAllow subscribes a raw responder answering an empty body on plugin's
// subject and returns the request message a raw client sends there: the
// same headers and body as Remote's.
func (env *interceptEnv) rawAllow(b *testing.B, plugin string) *nats.Msg {
	b.Helper()
	subj, err := env.client.Subjects().Hook(events.StageToolBefore, plugin)
	if err != nil {
		b.Fatal(err)
	}
	sub, err := env.svcNC.Subscribe(subj, func(m *nats.Msg) { _ = m.Respond(nil) })
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := env.svcNC.Flush(); err != nil {
		b.Fatal(err)
	}
	h, body, err := events.Encode(env.ev)
	if err != nil {
		b.Fatal(err)
	}
	hdr := nats.Header(h)
	hdr.Del(events.HeaderMsgID)
	hdr.Set(remote.HeaderDeadline, time.Now().Add(interceptors.DefaultTimeout).UTC().Format(time.RFC3339Nano))
	hdr.Set(remote.HeaderTimeoutMs, strconv.Itoa(int(interceptors.DefaultTimeout/time.Millisecond)))
	return &nats.Msg{Subject: subj, Header: hdr, Data: body}
}

// measure runs op b.N times and reports the median latency.
func measure(b *testing.B, op func(ctx context.Context) error) {
	b.Helper()
	lat := make([]time.Duration, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		// Each call gets its own timeout, as the chain gives it.
		ctx, cancel := context.WithTimeout(context.Background(), interceptors.DefaultTimeout)
		err := op(ctx)
		cancel()
		lat[i] = time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
}

// BenchmarkRemoteRoundTrip is one Remote.Intercept on tool.before against
// a Serve'd allow. Compare with BenchmarkRawRequestReply.
func BenchmarkRemoteRoundTrip(b *testing.B) { benchRemoteRoundTrip(b, newInterceptEnv(b)) }

// BenchmarkRawRequestReply is the baseline of BenchmarkRemoteRoundTrip:
// one raw nats.go request of the same bytes, answered empty.
func BenchmarkRawRequestReply(b *testing.B) { benchRawRequestReply(b, newInterceptEnv(b)) }

// BenchmarkRemoteRoundTripTCP is BenchmarkRemoteRoundTrip over TCP
// loopback. Compare with BenchmarkRawRequestReplyTCP.
func BenchmarkRemoteRoundTripTCP(b *testing.B) { benchRemoteRoundTrip(b, newTCPInterceptEnv(b)) }

// BenchmarkRawRequestReplyTCP is BenchmarkRawRequestReply over TCP
// loopback.
func BenchmarkRawRequestReplyTCP(b *testing.B) { benchRawRequestReply(b, newTCPInterceptEnv(b)) }

func benchRemoteRoundTrip(b *testing.B, env *interceptEnv) {
	env.serveAllow(b, benchPlugins[0])
	r, err := remote.NewClient(env.client, interceptors.Registration{Plugin: benchPlugins[0], Stage: events.StageToolBefore})
	if err != nil {
		b.Fatal(err)
	}
	measure(b, func(ctx context.Context) error {
		dl, _ := ctx.Deadline()
		d, err := r.Intercept(ctx, &interceptors.Request{Stage: events.StageToolBefore, Event: env.ev, Deadline: dl})
		if err == nil && d != nil {
			b.Fatalf("decision %+v, want allow", d)
		}
		return err
	})
}

func benchRawRequestReply(b *testing.B, env *interceptEnv) {
	msg := env.rawAllow(b, benchPlugins[0])
	nc := env.client.Conn()
	measure(b, func(ctx context.Context) error {
		reply, err := nc.RequestMsgWithContext(ctx, msg)
		if err == nil && len(reply.Data) != 0 {
			b.Fatalf("reply %q", reply.Data)
		}
		return err
	})
}

// BenchmarkRemoteChain3 is a chain of three remote interceptors on
// tool.before (Chain.Run: a goroutine and a timeout per call, records).
// Compare with BenchmarkRawRequestReply3.
func BenchmarkRemoteChain3(b *testing.B) {
	env := newInterceptEnv(b)
	chain := interceptors.NewChain()
	for _, p := range benchPlugins {
		env.serveAllow(b, p)
		if _, err := remote.Register(env.client, chain, interceptors.Registration{Plugin: p, Stage: events.StageToolBefore}); err != nil {
			b.Fatal(err)
		}
	}
	measure(b, func(ctx context.Context) error {
		out, err := chain.Run(ctx, env.ev)
		if err == nil && (out.Decision != interceptors.Allow || len(out.Records) != 3 || out.Records[2].Failure != nil) {
			b.Fatalf("outcome %+v", out)
		}
		return err
	})
}

// BenchmarkRawRequestReply3 is the baseline of BenchmarkRemoteChain3: three
// raw requests one after another.
func BenchmarkRawRequestReply3(b *testing.B) {
	env := newInterceptEnv(b)
	var msgs []*nats.Msg
	for _, p := range benchPlugins {
		msgs = append(msgs, env.rawAllow(b, p))
	}
	nc := env.client.Conn()
	measure(b, func(ctx context.Context) error {
		for _, m := range msgs {
			if _, err := nc.RequestMsgWithContext(ctx, m); err != nil {
				return err
			}
		}
		return nil
	})
}
