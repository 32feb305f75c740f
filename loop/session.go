package loop

import (
	"fmt"

	"github.com/hookbus/hookbus/events"
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
}

// RebuildSession turns a session's events (in stream order) into its
// conversation. Events whose data it cannot decode are left out and listed
// in Session.Skipped.
func RebuildSession(evs []*events.Event) (*Session, error) {
	s, _, err := rebuild(evs, "")
	return s, err
}

func rebuild(evs []*events.Event, runID string) (*Session, *runState, error) {
	s := &Session{}
	rs := &runState{afterIDs: map[string]bool{}}
	runs := map[string]bool{}
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
			s.Messages = append(s.Messages, events.Message{Role: events.RoleUser, Content: p.Prompt})
			if mine {
				rs.started = true
			}
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
