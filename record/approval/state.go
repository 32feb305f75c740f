package approval

import (
	"context"
	"fmt"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/events/tracectx"
	"github.com/hookbus/hookbus/record"
)

// state is what an answer reads of a run's record: the run as its next
// attempt reads it (record.FoldRun over the effective record cut at its
// first hole), how far the session was read, and the run's parent.
type state struct {
	*record.Run
	seen   uint64    // the stream sequence of the session's last event as read
	parent [3]string // the agent, session and run of the run's parent (a sub-agent's run)
}

// read reads and folds the record of run.
func read(ctx context.Context, h record.History, agent, session, run string) (*state, error) {
	evs, err := record.ReadRun(ctx, h, agent, session, run)
	if err != nil {
		return nil, fmt.Errorf("%w: read session %s/%s: %w", ErrUnrecorded, agent, session, err)
	}
	return fold(evs, run)
}

// fold folds a session's events (stream order) into the state of run.
func fold(evs []*events.Event, run string) (*state, error) {
	st := &state{}
	for _, e := range evs {
		st.seen = max(st.seen, e.Stored)
		if e.RunID == run && e.ParentRunID != "" && st.parent[2] == "" {
			st.parent = [3]string{e.ParentAgentID, e.ParentSessionID, e.ParentRunID}
		}
	}
	r, err := record.FoldRun(record.Truncated(record.Effective(evs), run), run)
	if err != nil {
		return nil, fmt.Errorf("%w: run %s: %v", ErrCorruptRun, run, err)
	}
	st.Run = r
	return st, nil
}

// answeredInStep is the first answer to a call of the run's pending step,
// or nil: what a client answering "every call waiting" of a step answered
// already is told.
func (st *state) answeredInStep() *events.ApprovalResolved {
	p := st.Pending()
	if p == nil {
		return nil
	}
	for _, c := range p.Message.ToolCalls {
		if cs := st.Calls[c.ID]; cs != nil && cs.Answer != nil {
			return cs.Answer
		}
	}
	return nil
}

// traceparent is the trace context of an answer to call: the tool call's
// span in the run's trace (the record's, as the engine continues it).
func (st *state) traceparent(run, call string) string {
	tc := tracectx.Context{Trace: tracectx.RunTrace(run), Flags: tracectx.FlagSampled}
	if p, err := tracectx.Parse(st.Traceparent); err == nil {
		tc.Trace, tc.Flags = p.Trace, p.Flags
	} else if p, err := tracectx.Parse(st.ParentTraceparent); err == nil {
		tc.Trace, tc.Flags = p.Trace, p.Flags
	}
	tc.Span = tracectx.RunSpan(run)
	if !tc.IsValid() {
		return ""
	}
	return tc.Child(tracectx.ToolSpan(run, call)).String()
}
