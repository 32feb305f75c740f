package telemetry

import (
	"context"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The spans of the record are built with the OpenTelemetry SDK's own
// tracer, as any instrumented program's: the ids are the derived ones
// (fixedIDs reads them from the ctx of each Start), the times are the
// events', and the ended spans are collected (collector) and exported by
// Traces itself, so an export failure reaches the observer and the event
// is delivered again.

// idsKey is the ctx key of the ids of the span being started.
type idsKey struct{}

type spanIDs struct {
	trace trace.TraceID
	span  trace.SpanID
}

// fixedIDs is an sdktrace.IDGenerator that hands out the ids in the ctx.
type fixedIDs struct{}

func (fixedIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	ids, _ := ctx.Value(idsKey{}).(spanIDs)
	return ids.trace, ids.span
}

func (fixedIDs) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	ids, _ := ctx.Value(idsKey{}).(spanIDs)
	return ids.span
}

// collector is an sdktrace.SpanProcessor that keeps the ended spans until
// they are taken.
type collector struct {
	mu    sync.Mutex
	spans []sdktrace.ReadOnlySpan
}

func (c *collector) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (c *collector) OnEnd(s sdktrace.ReadOnlySpan) {
	c.mu.Lock()
	c.spans = append(c.spans, s)
	c.mu.Unlock()
}

func (c *collector) take() []sdktrace.ReadOnlySpan {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.spans
	c.spans = nil
	return s
}

func (c *collector) Shutdown(context.Context) error   { return nil }
func (c *collector) ForceFlush(context.Context) error { return nil }
