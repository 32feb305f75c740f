package record

import (
	"cmp"
	"slices"

	"github.com/hookbus/hookbus/events"
)

// ApprovalStages are the stages that say what a Run says of its calls'
// requests for a human (Waiting, Asked): the approvals, the tool calls'
// and steps' ends, the attempts' starts (a later attempt supersedes what an
// earlier one wrote after it read the record) and the runs' ends. A reader
// that folds only approvals reads these.
var ApprovalStages = append(events.StagesOf(events.GroupApproval),
	append([]events.Stage{events.StageRunStarted, events.StageToolAfter, events.StageStepCompleted}, events.TerminalStages()...)...)

// Call is what a run's record says of one tool call.
type Call struct {
	ID string
	// Request is the call's request for a human (nil: none), Asked its
	// event.
	Request *events.ApprovalRequested
	Asked   *events.Event
	// Answer is the first answer to the request (nil: none yet), Answered
	// its event.
	Answer   *events.ApprovalResolved
	Answered *events.Event
	// Done is set when the call's tool.after is recorded.
	Done   bool
	doneAt uint64 // the tool.after's seq
	// Before is the call's tool.before as it took effect (nil: none),
	// BeforeID its event's id (the decisions name it), BeforeSeq its seq,
	// Step its step.
	Before    *events.ToolBefore
	BeforeID  string
	BeforeSeq uint64
	Step      int
	// Result is the call's raw result (tool.result), recorded before the
	// tool.after hooks ran.
	Result *events.ToolResult
	// SubBefore, SubAfter and SubFailed are a Task call's child run, as
	// recorded.
	SubBefore *events.SubagentBefore
	SubAfter  *events.SubagentAfter
	SubFailed *events.SubagentFailed
}

// Begun reports whether the record shows the call's tool at work: its raw
// result, or its sub-agent's events (subagent.before is written ahead of
// the child run).
func (c *Call) Begun() bool {
	return c.Result != nil || c.SubBefore != nil || c.SubAfter != nil || c.SubFailed != nil
}

// call returns what the record says of call id so far, an empty Call
// when it says nothing yet (the Call the events of id fill in later).
func (r *Run) call(id string) *Call {
	if r.Calls == nil {
		r.Calls = map[string]*Call{}
	}
	c := r.Calls[id]
	if c == nil {
		c = &Call{ID: id}
		r.Calls[id] = c
	}
	return c
}

// addApproval folds one event of the stages a reader of approvals reads
// (ApprovalStages) and returns the call it is about (nil for an event
// about none).
func (r *Run) addApproval(e *events.Event) (*Call, error) {
	switch {
	case e.Stage == events.StageApprovalRequested:
		p, err := events.Data[events.ApprovalRequested](e)
		if err != nil || p.Call.ID == "" {
			return nil, err
		}
		c := r.call(p.Call.ID)
		c.Request, c.Asked = &p, e
		r.attempted = true // an attempt asked: a later run.started is another
		return c, nil
	case e.Stage == events.StageApprovalResolved:
		p, err := events.Data[events.ApprovalResolved](e)
		if err != nil {
			return nil, err
		}
		c := r.Calls[p.CallID]
		if c == nil || c.Request == nil {
			return nil, nil
		}
		if c.Answer == nil {
			c.Answer, c.Answered = &p, e
		}
		return c, nil
	case e.Stage == events.StageToolAfter:
		p, err := events.Data[events.ToolAfter](e)
		if err != nil {
			return nil, err
		}
		c := r.call(p.Call.ID)
		c.Done, c.doneAt = true, e.Seq
		return c, nil
	case e.Stage == events.StageStepCompleted:
		r.steps = append(r.steps, step{e.Step, e.Seq})
	case e.Stage == events.StageRunStarted:
		if r.attempted {
			r.supersede(e.Seq)
		}
		r.attempted = true
	case e.Stage.Terminal():
		r.ended = e
	}
	return nil, nil
}

// supersede forgets what was added with seq n or more.
func (r *Run) supersede(n uint64) {
	for _, c := range r.Calls {
		if c.Asked != nil && c.Asked.Seq >= n {
			c.Request, c.Asked = nil, nil
		}
		if c.Answered != nil && (c.Answered.Seq >= n || c.Request == nil) {
			c.Answer, c.Answered = nil, nil
		}
		if c.Done && c.doneAt >= n {
			c.Done, c.doneAt = false, 0
		}
	}
	r.steps = slices.DeleteFunc(r.steps, func(s step) bool { return s.seq >= n })
}

// Ended returns the run's end, nil while it goes on.
func (r *Run) Ended() *events.Event { return r.ended }

// Asked returns the calls that asked for a human, in the order asked.
func (r *Run) Asked() []*Call {
	var out []*Call
	for _, c := range r.Calls {
		if c.Request != nil {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b *Call) int {
		return cmp.Or(cmp.Compare(a.Asked.Seq, b.Asked.Seq), cmp.Compare(a.Asked.Stored, b.Asked.Stored), cmp.Compare(a.Asked.ID, b.Asked.ID))
	})
	return out
}

// Waits reports whether c, a call of the run, waits for a human: it asked,
// has neither an answer nor a tool.after, the run has not ended, and the
// call is of the step under way (one not completed). A run whose record has
// no completed step (a coding agent's run recorded by the bridge, whose
// loop is the agent's own, or an engine's first step) counts every call
// asked.
func (r *Run) Waits(c *Call) bool {
	return c.Request != nil && c.Answer == nil && !c.Done && r.ended == nil &&
		(len(r.steps) == 0 || c.Asked.Step > r.steps[len(r.steps)-1].n)
}

// Waiting returns the calls that wait for a human (Waits), in the order
// asked.
func (r *Run) Waiting() []*Call {
	return slices.DeleteFunc(r.Asked(), func(c *Call) bool { return !r.Waits(c) })
}
