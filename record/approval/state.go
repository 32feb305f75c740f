package approval

import (
	"context"
	"fmt"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/events/tracectx"
	"github.com/hookbus/hookbus/record"
)

// state is what an answer reads of a run's record (effective, cut at its
// first hole, as the engine reads it): its calls' requests for a human and
// what waits (record.Run), the step under way and the sub-agents its calls
// called, where the run's chain stands and how far the session was read.
type state struct {
	run     record.Run
	calls   map[string]*call // the calls the record says anything of
	found   bool
	started bool
	reply   *events.ModelResponded // the last model reply
	step    int                    // its step
	done    int                    // the last step completed
	chain   record.Chain           // the run's last event
	seen    uint64                 // the stream sequence of the session's last event as read

	trace, parentTrace string    // the run's first traceparent, its first run.started's parent
	parent             [3]string // the agent, session and run of the run's parent (a sub-agent's run)
}

// call is what the record says of one tool call.
type call struct {
	*record.Call
	sub      *events.SubagentBefore // a Task call's child, as recorded
	subEnded bool                   // its subagent.after or subagent.failed
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
	st := &state{calls: map[string]*call{}}
	for _, e := range evs {
		st.seen = max(st.seen, e.Stored)
		if e.RunID == run && e.ParentRunID != "" && st.parent[2] == "" {
			st.parent = [3]string{e.ParentAgentID, e.ParentSessionID, e.ParentRunID}
		}
	}
	var last *events.Event // the run's last event by seq
	for _, e := range record.Truncated(record.Effective(evs), run) {
		if e.RunID != run {
			continue
		}
		st.found = true
		if st.trace == "" {
			st.trace = e.Traceparent
		}
		if e.Seq >= st.chain.Seq {
			st.chain.Seq, last = e.Seq, e
		}
		if err := st.add(e); err != nil {
			return nil, fmt.Errorf("%w: run %s: %v", ErrCorruptRun, run, err)
		}
	}
	if last != nil {
		st.chain.Hash = last.ChainHash()
	}
	return st, nil
}

// add folds one event of the run.
func (st *state) add(e *events.Event) error {
	c, err := st.run.Add(e)
	if err != nil {
		return err
	}
	if c != nil {
		st.call(c.ID)
	}
	switch e.Stage {
	case events.StageRunStarted:
		p, err := events.Data[events.RunStarted](e)
		if err != nil {
			return err
		}
		if !st.started {
			st.started, st.parentTrace = true, p.ParentTraceparent
		}
	case events.StageStepCompleted:
		st.done = e.Step
	case events.StageModelResponded:
		p, err := events.Data[events.ModelResponded](e)
		if err != nil {
			return err
		}
		st.reply, st.step = &p, e.Step
	case events.StageToolBefore:
		p, err := events.Data[events.ToolBefore](e)
		if err != nil {
			return err
		}
		st.call(p.Call.ID)
	case events.StageToolResult:
		p, err := events.Data[events.ToolResultRecord](e)
		if err != nil {
			return err
		}
		st.call(p.Call.ID)
	case events.StageSubagentBefore:
		p, err := events.Data[events.SubagentBefore](e)
		if err != nil || p.CallID == "" {
			return err
		}
		st.call(p.CallID).sub = &p
	case events.StageSubagentAfter:
		p, err := events.Data[events.SubagentAfter](e)
		if err != nil || p.CallID == "" {
			return err
		}
		st.call(p.CallID).subEnded = true
	case events.StageSubagentFailed:
		p, err := events.Data[events.SubagentFailed](e)
		if err != nil || p.CallID == "" {
			return err
		}
		st.call(p.CallID).subEnded = true
	}
	return nil
}

func (st *state) call(id string) *call {
	c := st.calls[id]
	if c == nil {
		c = &call{Call: st.run.Call(id)}
		st.calls[id] = c
	}
	return c
}

// pending returns the reply whose step is not completed yet (its tool calls
// are under way), or nil.
func (st *state) pending() *events.ModelResponded {
	if st.reply != nil && st.step > st.done {
		return st.reply
	}
	return nil
}

// waiting returns the calls that wait for a human (record.Run.Waiting).
func (st *state) waiting() []*call {
	var out []*call
	for _, c := range st.run.Waiting() {
		out = append(out, st.call(c.ID))
	}
	return out
}

// answeredInStep is the first answer to a call of the run's pending step,
// or nil: what a client answering "every call waiting" of a step answered
// already is told.
func (st *state) answeredInStep() *events.ApprovalResolved {
	p := st.pending()
	if p == nil {
		return nil
	}
	for _, c := range p.Message.ToolCalls {
		if cs := st.calls[c.ID]; cs != nil && cs.Answer != nil {
			return cs.Answer
		}
	}
	return nil
}

// traceparent is the trace context of an answer to call: the tool call's
// span in the run's trace (the record's, as the engine continues it).
func (st *state) traceparent(run, call string) string {
	tc := tracectx.Context{Trace: tracectx.RunTrace(run), Flags: tracectx.FlagSampled}
	if p, err := tracectx.Parse(st.trace); err == nil {
		tc.Trace, tc.Flags = p.Trace, p.Flags
	} else if p, err := tracectx.Parse(st.parentTrace); err == nil {
		tc.Trace, tc.Flags = p.Trace, p.Flags
	}
	tc.Span = tracectx.RunSpan(run)
	if !tc.IsValid() {
		return ""
	}
	return tc.Child(tracectx.ToolSpan(run, call)).String()
}
