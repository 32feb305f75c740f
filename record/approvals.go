package record

import (
	"cmp"
	"slices"

	"github.com/hookbus/hookbus/events"
)

// ApprovalStages are the stages a Run reads: the approvals, the tool calls'
// and steps' ends, the attempts' starts (a later attempt supersedes what an
// earlier one wrote after it read the record) and the runs' ends. A reader
// that folds only approvals reads these.
var ApprovalStages = append(events.StagesOf(events.GroupApproval),
	append([]events.Stage{events.StageRunStarted, events.StageToolAfter, events.StageStepCompleted}, events.TerminalStages()...)...)

// Call is what a run's record says of one tool call's request for a human.
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
}

// Run folds one run's events into what they say of its calls' requests
// for a human. It reads the effective record (Effective) whether it is
// given the run's effective events or all of them as stored: a run.started
// after the run's first (an attempt that resumed it) with seq N supersedes
// what was added before it with seq N or more. The zero value is ready;
// Add the events.
type Run struct {
	calls   map[string]*Call
	steps   []step        // the steps completed, as added
	started bool          // a run.started was added
	ended   *events.Event // the run's end
}

// step is a step.completed: its step and seq.
type step struct {
	n   int
	seq uint64
}

// Call returns what the record says of call id so far, an empty Call when
// it says nothing yet (the Call the events of id fill in later).
func (r *Run) Call(id string) *Call {
	if r.calls == nil {
		r.calls = map[string]*Call{}
	}
	c := r.calls[id]
	if c == nil {
		c = &Call{ID: id}
		r.calls[id] = c
	}
	return c
}

// Add folds one event of the run and returns the call it is about (nil
// for an event about none). An event of a stage Run reads whose data does
// not decode is an error, and folds nothing.
func (r *Run) Add(e *events.Event) (*Call, error) {
	switch {
	case e.Stage == events.StageApprovalRequested:
		p, err := events.Data[events.ApprovalRequested](e)
		if err != nil || p.Call.ID == "" {
			return nil, err
		}
		c := r.Call(p.Call.ID)
		c.Request, c.Asked = &p, e
		r.started = true // an attempt asked: a later run.started is another
		return c, nil
	case e.Stage == events.StageApprovalResolved:
		p, err := events.Data[events.ApprovalResolved](e)
		if err != nil {
			return nil, err
		}
		c := r.calls[p.CallID]
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
		c := r.Call(p.Call.ID)
		c.Done, c.doneAt = true, e.Seq
		return c, nil
	case e.Stage == events.StageStepCompleted:
		r.steps = append(r.steps, step{e.Step, e.Seq})
	case e.Stage == events.StageRunStarted:
		if r.started {
			r.supersede(e.Seq)
		}
		r.started = true
	case e.Stage.Terminal():
		r.ended = e
	}
	return nil, nil
}

// supersede forgets what was added with seq n or more.
func (r *Run) supersede(n uint64) {
	for _, c := range r.calls {
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
	for _, c := range r.calls {
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
	var out []*Call
	for _, c := range r.Asked() {
		if r.Waits(c) {
			out = append(out, c)
		}
	}
	return out
}
