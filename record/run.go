package record

import (
	"cmp"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// Run is what a run's record says of the run, so that an interrupted run
// resumes where it was and an answer finds what waits: its request and
// attempts, its steps and the model's last reply, its tool calls (their
// requests for a human and answers, results and sub-agents), the hooks'
// decisions, its end, and where its chain stands. FoldRun folds it from a
// session's effective events.
//
// What it says of the calls' requests for a human (Waiting, Asked, Ended)
// reads the effective record whether Add is given the run's effective
// events or all of them as stored: a run.started after the run's first (an
// attempt that resumed it) with seq N supersedes what was added before it
// with seq N or more. The rest reads effective events only. The zero value
// is ready; Add the events.
type Run struct {
	// Found is set once an event of the run is added; Events counts them.
	Found  bool
	Events int
	// Traceparent is the first traceparent of the run's events (its trace).
	Traceparent string
	// Intake is the run's request, as first recorded (nil: none).
	Intake *events.Intake
	// Started is set by a run.started; Prompt and ParentTraceparent are
	// the first's; FirstClaim and LastClaim are the stream sequences of
	// the first and the last (an attempt's claim on the session),
	// StartedSeqs the seqs of all.
	Started                   bool
	Prompt, ParentTraceparent string
	FirstClaim, LastClaim     uint64
	StartedSeqs               []uint64
	// Definition is the agent definition of the last run.started naming
	// one (nil: none does).
	Definition *events.Definition
	// Step is the last step started, StepDone the last completed.
	Step, StepDone int
	// Reply is the model's last reply, ReplyStep its step, ReplyEnd the
	// recorded decision that ended the run on it (Decisions.End: its calls
	// never run); Usage sums the replies' usage.
	Reply     *events.ModelResponded
	ReplyStep int
	ReplyEnd  *interceptors.ChainResult
	Usage     events.Usage
	// Continues counts the stops a hook continued, ContStep is the step of
	// the last; StopStep is that of the last stop that ended the run, and
	// StopHook the last stop hook that decided stop.
	Continues, ContStep, StopStep int
	StopHook                      *events.HookDecided
	// Decisions are the decisions that ended a chain on the run's events.
	Decisions Decisions
	// Calls are the tool calls the record says anything of, by id.
	Calls map[string]*Call
	// TakenBy (FoldRun) is the first run.started of another run stored
	// after the run's last claim: that run's turn came after this run's
	// last attempt claimed the session.
	TakenBy *events.Event

	last      *events.Event // the run's last event by seq
	attempted bool          // a run.started or a request for a human was added
	steps     []step        // the steps completed, as added
	ended     *events.Event // the run's end
}

// step is a step.completed: its step and seq.
type step struct {
	n   int
	seq uint64
}

// FoldRun folds the events of run id among a session's effective events
// (Effective; Truncated, to read the run as its next attempt does). An
// event of the run that does not decode is an error: a record nobody can
// read says nothing of where the run is.
func FoldRun(evs []*events.Event, id string) (*Run, error) {
	r := &Run{}
	for _, e := range evs {
		if e.RunID != id {
			continue
		}
		if _, err := r.Add(e); err != nil {
			return nil, err
		}
	}
	if r.Started {
		for _, e := range evs {
			if e.Stage == events.StageRunStarted && e.RunID != id && e.Stored > r.LastClaim &&
				(r.TakenBy == nil || e.Stored < r.TakenBy.Stored) {
				r.TakenBy = e
			}
		}
	}
	return r, nil
}

// Add folds one event of the run and returns the call it is about (nil
// for an event about none). An event of the run's own whose data does not
// decode is an error, and folds nothing further; a hook's record that does
// not decode decides nothing.
func (r *Run) Add(e *events.Event) (*Call, error) {
	r.Found = true
	r.Events++
	r.Traceparent = cmp.Or(r.Traceparent, e.Traceparent)
	if r.last == nil || e.Seq >= r.last.Seq {
		r.last = e
	}
	c, err := r.addApproval(e)
	if err != nil {
		return nil, err
	}
	switch e.Stage.Group() {
	case events.GroupHook:
		r.addHook(e)
	case events.GroupRun:
		err = r.addRun(e)
	case events.GroupStep:
		if e.Stage == events.StageStepStarted {
			r.Step = e.Step
		} else {
			r.StepDone = e.Step
		}
	case events.GroupModel:
		err = r.addReply(e)
	case events.GroupTool, events.GroupSubagent:
		err = r.addCall(e)
	}
	return c, err
}

// Chain returns where the run's chain stands: the seq and chain hash of
// its last event added (by seq), the zero Chain when none is.
func (r *Run) Chain() Chain { return chainAt(r.last) }

// addHook notes a decision that ended a chain, and the last stop hook that
// decided stop.
func (r *Run) addHook(e *events.Event) {
	if r.Decisions == nil {
		r.Decisions = Decisions{}
	}
	r.Decisions.Add(e)
	if e.Stage != events.StageHookDecided {
		return
	}
	p, err := events.Data[events.HookDecided](e)
	if err == nil && !p.Shadow && p.Stage == events.StageStop && p.Decision == string(interceptors.Stop) {
		r.StopHook = &p
	}
}

// addRun folds the run's own events: its request, its attempts' starts,
// its stops.
func (r *Run) addRun(e *events.Event) error {
	switch e.Stage {
	case events.StageIntake:
		if r.Intake != nil {
			return nil
		}
		p, err := events.Data[events.Intake](e)
		if err != nil {
			return err
		}
		r.Intake = &p
	case events.StageRunStarted:
		p, err := events.Data[events.RunStarted](e)
		if err != nil {
			return err
		}
		if !r.Started {
			r.Prompt, r.FirstClaim, r.ParentTraceparent = p.Prompt, e.Stored, p.ParentTraceparent
		}
		if p.Definition != nil {
			r.Definition = p.Definition
		}
		r.Started, r.LastClaim = true, max(r.LastClaim, e.Stored)
		r.StartedSeqs = append(r.StartedSeqs, e.Seq)
	case events.StageStop:
		p, err := events.Data[events.Stop](e)
		if err != nil {
			return err
		}
		if p.Continue != "" {
			r.Continues++
			r.ContStep = e.Step
		} else {
			r.StopStep = e.Step
		}
	}
	return nil
}

// addReply folds the model's replies: the last one, its usage, and the
// decision that ended the run on it.
func (r *Run) addReply(e *events.Event) error {
	if e.Stage != events.StageModelResponded {
		return nil
	}
	p, err := events.Data[events.ModelResponded](e)
	if err != nil {
		return err
	}
	r.Reply, r.ReplyStep = &p, e.Step
	r.Usage = r.Usage.Add(p.Usage)
	r.ReplyEnd = r.Decisions.End(e.ID)
	return nil
}

// addCall folds a tool call's record: the call as it took effect, its raw
// result, a Task call's child run.
func (r *Run) addCall(e *events.Event) error {
	var err error
	switch e.Stage {
	case events.StageToolBefore:
		var p events.ToolBefore
		if p, err = events.Data[events.ToolBefore](e); err == nil {
			c := r.call(p.Call.ID)
			c.Before, c.BeforeID, c.BeforeSeq, c.Step = &p, e.ID, e.Seq, e.Step
		}
	case events.StageToolResult:
		var p events.ToolResultRecord
		if p, err = events.Data[events.ToolResultRecord](e); err == nil {
			r.call(p.Call.ID).Result = &p.Result
		}
	case events.StageSubagentBefore:
		var p events.SubagentBefore
		if p, err = events.Data[events.SubagentBefore](e); err == nil && p.CallID != "" {
			r.call(p.CallID).SubBefore = &p
		}
	case events.StageSubagentAfter:
		var p events.SubagentAfter
		if p, err = events.Data[events.SubagentAfter](e); err == nil && p.CallID != "" {
			r.call(p.CallID).SubAfter = &p
		}
	case events.StageSubagentFailed:
		var p events.SubagentFailed
		if p, err = events.Data[events.SubagentFailed](e); err == nil && p.CallID != "" {
			r.call(p.CallID).SubFailed = &p
		}
	}
	return err
}

// Pending returns the reply whose step is not completed yet (its tool
// calls are under way), or nil.
func (r *Run) Pending() *events.ModelResponded {
	if r.Reply != nil && r.ReplyStep > r.StepDone {
		return r.Reply
	}
	return nil
}

// Answered reports whether the run's last completed step gave the answer
// (a reply without tool calls that no stop hook continued): only the run's
// end is missing.
func (r *Run) Answered() bool {
	return r.Reply != nil && r.StepDone > 0 && r.ReplyStep == r.StepDone &&
		len(r.Reply.Message.ToolCalls) == 0 && r.ContStep != r.StepDone
}
