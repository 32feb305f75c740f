package tracectx

import (
	"context"
	"crypto/sha256"
	"strconv"

	"github.com/oklog/ulid/v2"
)

// The derivations below are the wire protocol (docs/PROTOCOL.md, "Trace
// context"): another implementation derives the same ids from the same
// record.

// RunTrace is the trace of a run that continues no caller's trace: the run
// id's 16 bytes when it is a ULID (as the ids hookbus mints are), else the
// first 16 bytes of SHA-256("hookbus/trace\x00" + runID).
func RunTrace(runID string) TraceID {
	var t TraceID
	if u, err := ulid.ParseStrict(runID); err == nil && u != (ulid.ULID{}) {
		copy(t[:], u[:])
		return t
	}
	h := sha256.Sum256([]byte("hookbus/trace\x00" + runID))
	copy(t[:], h[:16])
	return t
}

// RunSpan is the id of a run's invoke_agent span.
func RunSpan(runID string) SpanID { return span("run", runID) }

// ChatSpan is the id of the model call of step step of a run (its chat
// span; a retried call is the same span).
func ChatSpan(runID string, step int) SpanID { return span("chat", runID, strconv.Itoa(step)) }

// ToolSpan is the id of a tool call's execute_tool span (call is the tool
// call id, unique within a run).
func ToolSpan(runID, call string) SpanID { return span("tool", runID, call) }

// HookSpan is the id of the call of plugin's interceptor on the event
// stored with id eventID (the event_id of its hook.decided or hook.failed).
func HookSpan(eventID, plugin string) SpanID { return span("hook", eventID, plugin) }

// span is the first 8 bytes of SHA-256 of the parts, each followed by a
// NUL; an all-zero result (never seen in practice) becomes 1.
func span(parts ...string) SpanID {
	h := sha256.New()
	h.Write([]byte("hookbus/span"))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	var s SpanID
	copy(s[:], h.Sum(nil))
	if s == (SpanID{}) {
		s[7] = 1
	}
	return s
}

// hookCallKey is the context key of the interception a chain is running.
type hookCallKey struct{}

type hookCall struct {
	parent  Context
	eventID string
}

// WithHookCall returns ctx carrying the interception of the event that will
// be stored with id eventID, under span parent: HookCall derives each
// plugin's span from it. The loop sets it around a chain's run; the remote
// interceptor reads it to send the call's traceparent.
func WithHookCall(ctx context.Context, parent Context, eventID string) context.Context {
	return context.WithValue(ctx, hookCallKey{}, hookCall{parent: parent, eventID: eventID})
}

// HookCall is the trace context of plugin's call in the interception ctx
// carries (WithHookCall): parent's trace, HookSpan's id. ok is false when
// ctx carries none.
func HookCall(ctx context.Context, plugin string) (c Context, ok bool) {
	hc, ok := ctx.Value(hookCallKey{}).(hookCall)
	if !ok || !hc.parent.IsValid() {
		return Context{}, false
	}
	return hc.parent.Child(HookSpan(hc.eventID, plugin)), true
}
