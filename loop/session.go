package loop

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// Session is a conversation rebuilt from a session's events.
type Session struct {
	// Messages is the conversation so far, without any system prompt: each
	// run's prompt, the assistant replies as they took effect, the tool
	// results, and the messages hooks added to force a run on.
	Messages []events.Message
	// Runs is how many runs the session has, finished or not.
	Runs int
	// Skipped holds an error (wrapping ErrCorruptSession, naming the event)
	// for each event left out of Messages because its data does not decode
	// as its stage's payload: another producer's event, or a damaged one.
	// Like every hookbus reader, the rebuild skips what it cannot read
	// rather than make the session unusable.
	Skipped []error
}

// runState is what the events of one run id say about it, so an
// interrupted run resumes where it was.
type runState struct {
	found     bool
	terminal  *events.Event
	lastSeq   uint64
	intake    *events.Intake
	started   bool
	step      int // last step started
	stepDone  int // last step completed
	responded *events.ModelResponded
	respStep  int
	afterIDs  map[string]bool // tool call ids with a recorded tool.after
	usage     events.Usage
	continues int
	events    int
	history   int                 // messages of the session before the run's prompt
	stopStep  int                 // step of the last stop that ended the run (no continue)
	contStep  int                 // step of the last stop a hook continued
	stopHook  *events.HookDecided // the last stop hook that decided stop
	// ends holds the hook decisions that ended the run on an event, by the
	// event's id; respEnd is the one that ended it on the last
	// model.responded (its tool calls must not run on resume).
	ends    map[string]*errEnd
	respEnd *errEnd
}

// answered reports whether the run's last completed step gave the answer
// (a reply without tool calls that no stop hook continued): only the run's
// end is missing.
func (rs *runState) answered() bool {
	return rs.responded != nil && rs.stepDone > 0 && rs.respStep == rs.stepDone &&
		len(rs.responded.Message.ToolCalls) == 0 && rs.contStep != rs.stepDone
}

// RebuildSession turns a session's events (in stream order) into its
// conversation. A run's events are taken in seq order: after a fault (a
// reconnect, a stream leader change) a publish sent again may be stored
// after later events of its run. A resumed attempt's run.started does not
// repeat the run's prompt. Events whose data it cannot decode are left out
// and listed in Session.Skipped.
func RebuildSession(evs []*events.Event) (*Session, error) {
	s, _, err := rebuild(evs, "")
	return s, err
}

func rebuild(evs []*events.Event, runID string) (*Session, *runState, error) {
	evs = inRunOrder(evs)
	s := &Session{}
	rs := &runState{afterIDs: map[string]bool{}, ends: map[string]*errEnd{}}
	runs := map[string]bool{}
	started := map[string]bool{} // runs whose prompt is in s.Messages
	for _, e := range evs {
		runs[e.RunID] = true
		mine := runID != "" && e.RunID == runID
		if mine {
			rs.found = true
			rs.events++
			if e.Seq > rs.lastSeq {
				rs.lastSeq = e.Seq
			}
		}
		switch e.Stage {
		case events.StageIntake:
			if mine {
				var p events.Intake
				if _, err := s.decode(e, mine, &p); err != nil {
					return nil, nil, err
				}
				rs.intake = &p
			}
		case events.StageRunStarted:
			var p events.RunStarted
			if ok, err := s.decode(e, mine, &p); !ok {
				if err != nil {
					return nil, nil, err
				}
				continue
			}
			if started[e.RunID] {
				continue // a resumed attempt of the run: its prompt is in
			}
			started[e.RunID] = true
			if mine {
				rs.started, rs.history = true, len(s.Messages)
			}
			s.Messages = append(s.Messages, events.Message{Role: events.RoleUser, Content: p.Prompt})
		case events.StageStepStarted:
			if mine {
				rs.step = e.Step
			}
		case events.StageModelResponded:
			var p events.ModelResponded
			if ok, err := s.decode(e, mine, &p); !ok {
				if err != nil {
					return nil, nil, err
				}
				continue
			}
			s.Messages = append(s.Messages, p.Message)
			if mine {
				rs.responded, rs.respStep = &p, e.Step
				rs.usage = rs.usage.Add(p.Usage)
				rs.respEnd = rs.ends[e.ID]
			}
		case events.StageToolAfter:
			var p events.ToolAfter
			if ok, err := s.decode(e, mine, &p); !ok {
				if err != nil {
					return nil, nil, err
				}
				continue
			}
			s.Messages = append(s.Messages, toolMessage(&p))
			if mine {
				rs.afterIDs[p.Call.ID] = true
			}
		case events.StageStepCompleted:
			if mine {
				rs.stepDone = e.Step
			}
		case events.StageStop:
			var p events.Stop
			if ok, err := s.decode(e, mine, &p); !ok {
				if err != nil {
					return nil, nil, err
				}
				continue
			}
			if p.Continue != "" {
				s.Messages = append(s.Messages, continueMessage(p.Continue))
				if mine {
					rs.continues++
					rs.contStep = e.Step
				}
			} else if mine {
				rs.stopStep = e.Step
			}
		case events.StageHookDecided:
			if mine {
				var p events.HookDecided // audit only: one that does not decode is no stop
				if e.DecodeData(&p) == nil {
					if p.Stage == events.StageStop && p.Decision == string(interceptors.Stop) {
						rs.stopHook = &p
					}
					if p.EventID != "" {
						if end := endOf(verdict{kind: interceptors.Kind(p.Decision), reason: p.Reason, plugin: p.Plugin}); end != nil {
							rs.ends[p.EventID] = end
						}
					}
				}
			}
		case events.StageHookFailed:
			if mine {
				var p events.HookFailed
				if e.DecodeData(&p) == nil && p.EventID != "" && p.Outcome == string(interceptors.FailedClosed) {
					rs.ends[p.EventID] = &errEnd{events.ReasonDenied, p.Plugin + ": " + p.Kind + " (policy fail)"}
				}
			}
		case events.StageRunCompleted, events.StageRunFailed:
			if mine {
				rs.terminal = e
			}
		}
	}
	s.Runs = len(runs)
	return s, rs, nil
}

// inRunOrder returns evs with each run's events in seq order, the runs in
// the order their first events were stored. Events already in that order
// (the rule: only a fault reorders them) are returned as they are.
func inRunOrder(evs []*events.Event) []*events.Event {
	last := map[string]uint64{}
	ordered := true
	for _, e := range evs {
		if e.Seq < last[e.RunID] {
			ordered = false
			break
		}
		last[e.RunID] = e.Seq
	}
	if ordered {
		return evs
	}
	first := map[string]int{}
	for i, e := range evs {
		if _, ok := first[e.RunID]; !ok {
			first[e.RunID] = i
		}
	}
	out := slices.Clone(evs)
	slices.SortStableFunc(out, func(a, b *events.Event) int {
		return cmp.Or(cmp.Compare(first[a.RunID], first[b.RunID]), cmp.Compare(a.Seq, b.Seq))
	})
	return out
}

// decode decodes e's data into v. An event of the run being resumed
// (mine) that does not decode is an error: the run cannot go on from a
// record it cannot read. Any other is skipped: decode returns false and
// lists it in s.Skipped.
func (s *Session) decode(e *events.Event, mine bool, v any) (bool, error) {
	err := e.DecodeData(v)
	if err == nil {
		return true, nil
	}
	err = fmt.Errorf("%w: %v", ErrCorruptSession, err)
	if mine {
		return false, err
	}
	s.Skipped = append(s.Skipped, err)
	return false, nil
}

// toolMessage is the message the model is given for a finished tool call,
// live and when a session is rebuilt.
func toolMessage(p *events.ToolAfter) events.Message {
	content := p.Result.Content
	if p.Context != "" {
		content += "\n\n" + p.Context
	}
	return events.Message{Role: events.RoleTool, ToolCallID: p.Call.ID, Name: p.Call.Name, Content: content}
}

// continueMessage is the user message a stop hook's continue adds.
func continueMessage(text string) events.Message {
	return events.Message{Role: events.RoleUser, Content: text}
}
