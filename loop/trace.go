package loop

import (
	"fmt"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/events/tracectx"
)

// The trace context of a run's events: one trace per run (the caller's,
// when its request carries one), the run's span, a span per model call and
// per tool call, ids derived from the record (tracectx;
// docs/PROTOCOL.md, "Trace context"). An event's traceparent names the
// span it was produced in; the hook.decided and hook.failed of an
// interception carry the intercepted event's.

// checkTraceparent validates a request's traceparent.
func checkTraceparent(req *events.RunRequest) error {
	if req.Traceparent == "" {
		return nil
	}
	if _, err := tracectx.Parse(req.Traceparent); err != nil {
		return fmt.Errorf("run %s traceparent: %w", req.RunID, err)
	}
	return nil
}

// setTrace chooses the run's trace: the record's when the run has events
// (a resumed attempt continues the trace of the first), else the
// request's, else the run's own (tracectx.RunTrace).
func (r *builder) setTrace(st *runState) {
	parent := r.req.Traceparent
	if st.Found {
		parent = st.ParentTraceparent
	}
	r.parentTrace = parent
	r.trace = tracectx.Context{Trace: tracectx.RunTrace(r.req.RunID), Flags: tracectx.FlagSampled}
	if tc, err := tracectx.Parse(st.Traceparent); st.Found && err == nil {
		r.trace.Trace, r.trace.Flags = tc.Trace, tc.Flags
	} else if tc, err := tracectx.Parse(parent); err == nil {
		r.trace.Trace, r.trace.Flags = tc.Trace, tc.Flags
	}
	r.trace.Span = tracectx.RunSpan(r.req.RunID)
	r.runTrace, r.call, r.callTrace = r.trace.String(), "", ""
}

// traceparent is the trace context an event of stage st with payload p is
// produced in: the model call's span on model stages, the tool call's on
// the stages of one call, the run's otherwise.
func (r *builder) traceparent(st events.Stage, p any) string {
	if !r.trace.IsValid() {
		return ""
	}
	switch st {
	case events.StageModelResponded, events.StageModelFailed:
		return r.trace.Child(tracectx.ChatSpan(r.req.RunID, r.step)).String()
	}
	if call := callOf(p); call != "" {
		return r.toolTrace(call)
	}
	return r.runTrace
}

// toolTrace is the trace context of a tool call's span: a child run's
// request carries it. The last call's is kept: a call's events come
// together.
func (r *builder) toolTrace(call string) string {
	if call != r.call || r.callTrace == "" {
		r.call, r.callTrace = call, r.trace.Child(tracectx.ToolSpan(r.req.RunID, call)).String()
	}
	return r.callTrace
}

// callOf is the tool call id a payload belongs to, or "".
func callOf(p any) string {
	switch p := p.(type) {
	case events.ToolBefore:
		return p.Call.ID
	case events.ToolAfter:
		return p.Call.ID
	case events.ToolResultRecord:
		return p.Call.ID
	case events.ToolFailed:
		return p.Call.ID
	case events.ApprovalRequested:
		return p.Call.ID
	case events.ApprovalResolved:
		return p.CallID
	case events.SubagentBefore:
		return p.CallID
	case events.SubagentAfter:
		return p.CallID
	case events.SubagentFailed:
		return p.CallID
	}
	return ""
}
