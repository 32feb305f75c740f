package loop

import (
	"fmt"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/record"
)

// runState is what the events of one run id say about it (record.Run), so
// an interrupted run resumes where it was, and where its prompt is in the
// session's conversation.
type runState struct {
	*record.Run
	history int // messages of the session before the run's prompt
}

// definitionDigest is the digest of the run's recorded definition, "" for
// none: a resumption pins the run to it.
func (rs *runState) definitionDigest() string {
	if rs.Definition == nil {
		return ""
	}
	return rs.Definition.Digest
}

// goneOnBefore reports whether an attempt of the run started after every
// approval of the pending step was answered and before seq (the seq of this
// attempt's run.started): that attempt went on with the step and may have
// started an approved tool.
func (rs *runState) goneOnBefore(seq uint64) bool {
	p := rs.Pending()
	if p == nil {
		return false
	}
	var answered uint64
	for _, c := range p.Message.ToolCalls {
		cs := rs.Calls[c.ID]
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
	for _, s := range rs.StartedSeqs {
		if s > answered && s < seq {
			return true
		}
	}
	return false
}

// foldRun folds the effective events of a session into the state of run
// runID (record.FoldRun). An event of the run that does not decode is an
// error (wrapping ErrCorruptSession): the run cannot go on from a record
// it cannot read.
func foldRun(evs []*events.Event, runID string, s *Session) (*runState, error) {
	r, err := record.FoldRun(evs, runID)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptSession, err)
	}
	return &runState{Run: r, history: s.prompts[runID]}, nil
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
	return s, rs, nil
}
