package loop

import (
	"fmt"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/record"
)

// runState is what the events of one run id say about it, so an
// interrupted run resumes where it was.
type runState struct {
	found        bool
	terminal     *events.Event
	events       int
	intake       *events.Intake
	prompt       string // the prompt of the run's first run.started
	started      bool
	firstStarted uint64 // the stream sequence of the run's first run.started
	history      int    // messages of the session before the run's prompt
	step         int    // last step started
	stepDone     int    // last step completed
	usage        events.Usage

	responded *events.ModelResponded // the last model reply
	respStep  int
	respEnd   *errEnd // a hook ended the run on that reply: its calls never run

	calls     map[string]*callState // tool calls by id
	approvals record.Run            // the calls' requests for a human, what waits

	continues int
	stopStep  int                 // step of the last stop that ended the run (no continue)
	contStep  int                 // step of the last stop a hook continued
	stopHook  *events.HookDecided // the last stop hook that decided stop

	ends decisions

	// lastStarted is the seq of the run's last run.started; started the
	// seqs of all of them.
	lastStarted uint64
	startedSeqs []uint64
	// last is the seq and chain hash of the run's last event (by seq).
	last record.Chain

	// traceparent is the first traceparent of the run's events (its trace);
	// parentTrace the first run.started's parent_traceparent.
	traceparent, parentTrace string
	// definition is the agent definition of the run's last run.started
	// that names one (nil: none does).
	definition *events.Definition
	// lastClaim is the stream sequence of the run's last run.started;
	// takenBy the first run.started of another run stored after it: that
	// run's turn came after this run's last attempt claimed the session.
	lastClaim uint64
	takenBy   *events.Event
}

// callState is what the record says of one tool call.
type callState struct {
	before    *events.ToolBefore // tool.before as it took effect
	beforeID  string             // its event id (the decisions name it)
	beforeSeq uint64             // its seq
	step      int                // its step
	result    *events.ToolResult // tool.result: the raw result, recorded before tool.after hooks ran

	subBefore *events.SubagentBefore // a Task call's child, as recorded
	subAfter  *events.SubagentAfter
	subFailed *events.SubagentFailed

	// Call is what the record says of the call's request for a human
	// (record.Run): the request, its answer, whether tool.after is
	// recorded.
	*record.Call
}

// definitionDigest is the digest of the run's recorded definition, "" for
// none: a resumption pins the run to it.
func (rs *runState) definitionDigest() string {
	if rs.definition == nil {
		return ""
	}
	return rs.definition.Digest
}

func (rs *runState) call(id string) *callState {
	c := rs.calls[id]
	if c == nil {
		c = &callState{Call: rs.approvals.Call(id)}
		rs.calls[id] = c
	}
	return c
}

// answered reports whether the run's last completed step gave the answer
// (a reply without tool calls that no stop hook continued): only the run's
// end is missing.
func (rs *runState) answered() bool {
	return rs.responded != nil && rs.stepDone > 0 && rs.respStep == rs.stepDone &&
		len(rs.responded.Message.ToolCalls) == 0 && rs.contStep != rs.stepDone
}

// pending returns the reply whose step is not completed yet (its tool calls
// are under way), or nil.
func (rs *runState) pending() *events.ModelResponded {
	if rs.responded != nil && rs.respStep > rs.stepDone {
		return rs.responded
	}
	return nil
}

// foldRun folds the effective events of a session into the state of run
// runID. An event of the run that does not decode is an error (wrapping
// ErrCorruptSession): the run cannot go on from a record it cannot read.
func foldRun(evs []*events.Event, runID string, s *Session) (*runState, error) {
	rs := &runState{calls: map[string]*callState{}, ends: decisions{}}
	if at, ok := s.prompts[runID]; ok {
		rs.history = at
	}
	var last *events.Event // the run's last event by seq
	for _, e := range evs {
		if e.RunID != runID {
			continue
		}
		rs.found = true
		rs.events++
		if rs.traceparent == "" {
			rs.traceparent = e.Traceparent
		}
		if e.Seq >= rs.last.Seq {
			rs.last.Seq, last = e.Seq, e
		}
		if err := rs.fold(e); err != nil {
			return nil, err
		}
	}
	if last != nil {
		rs.last.Hash = last.ChainHash()
	}
	return rs, nil
}

// fold folds one event of the run, by its stage's group.
func (rs *runState) fold(e *events.Event) error {
	c, err := rs.approvals.Add(e)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCorruptSession, err)
	}
	if c != nil {
		rs.call(c.ID)
	}
	switch e.Stage.Group() {
	case events.GroupHook:
		rs.foldHook(e)
	case events.GroupRun:
		return rs.foldRunEvent(e)
	case events.GroupStep:
		if e.Stage == events.StageStepStarted {
			rs.step = e.Step
		} else {
			rs.stepDone = e.Step
		}
	case events.GroupModel:
		return rs.foldModel(e)
	case events.GroupTool:
		return rs.foldTool(e)
	case events.GroupSubagent:
		return rs.foldSubagent(e)
	}
	return nil
}

// foldHook notes a decision that ended a chain, and the last stop hook
// that decided stop. A record that does not decode ends nothing.
func (rs *runState) foldHook(e *events.Event) {
	rs.ends.add(e)
	if e.Stage != events.StageHookDecided {
		return
	}
	p, err := events.Data[events.HookDecided](e)
	if err == nil && !p.Shadow && p.Stage == events.StageStop && p.Decision == string(interceptors.Stop) {
		rs.stopHook = &p
	}
}

// foldRunEvent folds the run's own events: its request, its attempts'
// starts, its stops, its end.
func (rs *runState) foldRunEvent(e *events.Event) error {
	switch e.Stage {
	case events.StageIntake:
		if rs.intake != nil {
			return nil
		}
		p, err := decodeOwn[events.Intake](e)
		if err != nil {
			return err
		}
		rs.intake = &p
	case events.StageRunStarted:
		p, err := decodeOwn[events.RunStarted](e)
		if err != nil {
			return err
		}
		if !rs.started {
			rs.prompt, rs.firstStarted = p.Prompt, e.Stored
			rs.parentTrace = p.ParentTraceparent
		}
		if p.Definition != nil {
			rs.definition = p.Definition
		}
		rs.started = true
		rs.lastStarted = e.Seq
		rs.lastClaim = max(rs.lastClaim, e.Stored)
		rs.startedSeqs = append(rs.startedSeqs, e.Seq)
	case events.StageStop:
		p, err := decodeOwn[events.Stop](e)
		if err != nil {
			return err
		}
		if p.Continue != "" {
			rs.continues++
			rs.contStep = e.Step
		} else {
			rs.stopStep = e.Step
		}
	case events.StageRunCompleted, events.StageRunFailed:
		rs.terminal = e
	}
	return nil
}

// foldModel folds the model's replies: the last one, its usage, and
// whether a hook ended the run on it.
func (rs *runState) foldModel(e *events.Event) error {
	if e.Stage != events.StageModelResponded {
		return nil
	}
	p, err := decodeOwn[events.ModelResponded](e)
	if err != nil {
		return err
	}
	rs.responded, rs.respStep = &p, e.Step
	rs.usage = rs.usage.Add(p.Usage)
	rs.respEnd = rs.ends.ended(e.ID)
	return nil
}

// foldTool folds a tool call's record: the call as it took effect, its raw
// result.
func (rs *runState) foldTool(e *events.Event) error {
	switch e.Stage {
	case events.StageToolBefore:
		p, err := decodeOwn[events.ToolBefore](e)
		if err != nil {
			return err
		}
		c := rs.call(p.Call.ID)
		c.before, c.beforeID, c.beforeSeq, c.step = &p, e.ID, e.Seq, e.Step
	case events.StageToolResult:
		p, err := decodeOwn[events.ToolResultRecord](e)
		if err != nil {
			return err
		}
		rs.call(p.Call.ID).result = &p.Result
	}
	return nil
}

// foldSubagent folds a Task call's child run, as recorded.
func (rs *runState) foldSubagent(e *events.Event) error {
	switch e.Stage {
	case events.StageSubagentBefore:
		p, err := decodeOwn[events.SubagentBefore](e)
		if err != nil || p.CallID == "" {
			return err
		}
		rs.call(p.CallID).subBefore = &p
	case events.StageSubagentAfter:
		p, err := decodeOwn[events.SubagentAfter](e)
		if err != nil || p.CallID == "" {
			return err
		}
		rs.call(p.CallID).subAfter = &p
	case events.StageSubagentFailed:
		p, err := decodeOwn[events.SubagentFailed](e)
		if err != nil || p.CallID == "" {
			return err
		}
		rs.call(p.CallID).subFailed = &p
	}
	return nil
}

// waiting returns the calls that wait for a human (record.Run.Waiting).
func (rs *runState) waiting() []*callState {
	var out []*callState
	for _, c := range rs.approvals.Waiting() {
		out = append(out, rs.call(c.ID))
	}
	return out
}

// goneOnBefore reports whether an attempt of the run started after every
// approval of the pending step was answered and before seq (the seq of this
// attempt's run.started): that attempt went on with the step and may have
// started an approved tool.
func (rs *runState) goneOnBefore(seq uint64) bool {
	p := rs.pending()
	if p == nil {
		return false
	}
	var answered uint64
	for _, c := range p.Message.ToolCalls {
		cs := rs.calls[c.ID]
		if cs == nil || cs.Request == nil {
			continue
		}
		if cs.Answer == nil {
			return false
		}
		answered = max(answered, cs.Answered.Seq)
	}
	if answered == 0 {
		return false
	}
	for _, s := range rs.startedSeqs {
		if s > answered && s < seq {
			return true
		}
	}
	return false
}

// decodeOwn decodes an event of the run being resumed: one that does not
// decode is an error wrapping ErrCorruptSession.
func decodeOwn[T any](e *events.Event) (T, error) {
	p, _, err := decodeEvent[T](&Session{}, e, true)
	return p, err
}

// rebuild folds a session's events (stream order) into its conversation
// and the state of run runID.
func rebuild(evs []*events.Event, runID string) (*Session, *runState, error) {
	var seen uint64
	for _, e := range evs {
		seen = max(seen, e.Stored)
	}
	evs = record.Truncated(record.Effective(evs), runID)
	s, err := foldSession(evs, runID)
	if err != nil {
		return nil, nil, err
	}
	s.lastSeen = seen
	rs, err := foldRun(evs, runID, s)
	if err != nil {
		return nil, nil, err
	}
	if rs.started {
		for _, e := range evs {
			if e.Stage == events.StageRunStarted && e.RunID != runID && e.Stored > rs.lastClaim &&
				(rs.takenBy == nil || e.Stored < rs.takenBy.Stored) {
				rs.takenBy = e
			}
		}
	}
	return s, rs, nil
}
