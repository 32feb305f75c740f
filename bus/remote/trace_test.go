package remote_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/events/tracectx"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The interception request carries the call's W3C traceparent header, so
// an interceptor extracts it with OpenTelemetry's own propagator and its
// spans continue the run's trace under the call's span.
func TestRemoteRequestCarriesTraceparent(t *testing.T) {
	env := newRemoteEnv(t)
	got := make(chan nats.Header, 1)
	sub, err := env.svcNC.QueueSubscribe("hookbus.hook.tool.before.traced", "traced", func(m *nats.Msg) {
		got <- m.Header
		_ = m.Respond(nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := env.svcNC.Flush(); err != nil {
		t.Fatal(err)
	}
	r := env.remote(t, interceptors.Registration{Plugin: "traced", Stage: events.StageToolBefore})
	ev := toolBefore(t)
	parent := tracectx.Context{Trace: tracectx.RunTrace(ev.RunID), Span: tracectx.ToolSpan(ev.RunID, "call-1"), Flags: tracectx.FlagSampled}
	ev.Traceparent = parent.String()
	stored := events.NewID()

	ctx, cancel := context.WithTimeout(tracectx.WithHookCall(context.Background(), parent, stored), 5*time.Second)
	defer cancel()
	dl, _ := ctx.Deadline()
	if _, err := r.Intercept(ctx, &interceptors.Request{Stage: ev.Stage, Event: ev, Registration: r.Registration(), Deadline: dl}); err != nil {
		t.Fatal(err)
	}
	h := <-got
	carrier := propagation.MapCarrier{}
	for k, v := range h {
		carrier[k] = v[0]
	}
	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier))
	if !sc.IsValid() || !sc.IsRemote() || !sc.IsSampled() {
		t.Fatalf("extracted %+v from %v", sc, h)
	}
	if sc.TraceID() != trace.TraceID(parent.Trace) || sc.SpanID() != trace.SpanID(tracectx.HookSpan(stored, "traced")) {
		t.Fatalf("extracted trace %s span %s; want %s %s", sc.TraceID(), sc.SpanID(), parent.Trace, tracectx.HookSpan(stored, "traced"))
	}
	if h.Get(events.HeaderPrefix+events.ExtTraceparent) != ev.Traceparent {
		t.Fatalf("ce-traceparent %q, want the event's %q", h.Get(events.HeaderPrefix+events.ExtTraceparent), ev.Traceparent)
	}

	// Without the loop's context the event's own trace context is sent.
	if _, err := call(r, ev, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if h := <-got; h.Get("traceparent") != ev.Traceparent {
		t.Fatalf("traceparent %q, want the event's %q", h.Get("traceparent"), ev.Traceparent)
	}
}
