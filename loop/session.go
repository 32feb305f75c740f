package loop

import (
	"fmt"
	"slices"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/record"
)

// Session is a conversation rebuilt from a session's events.
type Session struct {
	// Messages is the conversation so far, without any system prompt: each
	// run's prompt, the assistant replies as they took effect (a reply a
	// hook denied or stopped is left out, as the run left it out), the tool
	// results, and the messages hooks added to force a run on. A tool call
	// that a run that ended never answered (the run stopped, failed or was
	// interrupted mid-step) is given a result saying so, so that the
	// conversation stays one a provider accepts.
	Messages []events.Message
	// Runs is how many runs the part of the session read has, finished or
	// not.
	Runs int
	// Compactions counts the compactions read.
	Compactions int
	// Skipped holds an error (wrapping ErrCorruptSession, naming the event)
	// for each event left out of Messages because its data does not decode
	// as its stage's payload: another producer's event, or a damaged one.
	// Like every hookbus reader, the rebuild skips what it cannot read
	// rather than make the session unusable.
	Skipped []error

	// lastClaim is the stream sequence of the session's last run.started:
	// the claim a new attempt's claim must follow.
	lastClaim uint64
	// lastSeen is the stream sequence of the session's last event as read
	// (superseded or not): what a resumed attempt's claim expects last.
	lastSeen uint64
	// prompts is where each run's prompt is in Messages.
	prompts map[string]int
	// open are the calls of other runs than the one resumed left without
	// a result so far: a new run's turn answers them first.
	open []events.ToolCall
}

// RebuildSession turns a session's events (in stream order) into its
// conversation. A run's events are taken in seq order, without those a
// later attempt of the run superseded (see docs/PROTOCOL.md, "One writer
// per session"). A resumed attempt's run.started does not repeat the run's
// prompt. Events whose data it cannot decode are left out and listed in
// Session.Skipped.
func RebuildSession(evs []*events.Event) (*Session, error) {
	return foldSession(record.Effective(evs), "")
}

// NoResultContent is the result given, in a rebuilt conversation, to a tool
// call its run ended without answering.
const NoResultContent = "error: no result: the run ended before this tool call finished"

// foldSession folds a session's effective events into its conversation.
// Events of run mine (the run being resumed, "" for none) that do not
// decode are an error; others are skipped. Tool calls of mine left
// unanswered are its pending calls, not answered here.
func foldSession(evs []*events.Event, mine string) (*Session, error) {
	f := &sessionFold{s: &Session{prompts: map[string]int{}}, mine: mine, ends: record.Decisions{},
		open: map[string][]events.ToolCall{}, late: lateResults(evs, mine), answered: map[string]bool{}, asked: map[string]bool{}}
	runs := map[string]bool{}
	for _, e := range evs {
		runs[e.RunID] = true
		if err := f.add(e); err != nil {
			return nil, err
		}
	}
	f.s.Runs = len(runs)
	for run, calls := range f.open {
		if run != mine {
			f.s.open = append(f.s.open, calls...)
		}
	}
	return f.s, nil
}

// sessionFold is a session's conversation as its events are folded.
type sessionFold struct {
	s        *Session
	mine     string
	ends     record.Decisions
	open     map[string][]events.ToolCall // calls of each run not answered yet
	late     map[*events.Event]bool       // lateResults
	answered map[string]bool              // run/call answered with no result
	asked    map[string]bool              // run/call made by a reply of the read
}

// add folds one event. An event of run mine that does not decode is an
// error; another is skipped (decodeEvent).
func (f *sessionFold) add(e *events.Event) error {
	s, own := f.s, f.mine != "" && e.RunID == f.mine
	switch e.Stage {
	case events.StageHookDecided, events.StageHookFailed:
		f.ends.Add(e)
	case events.StageRunStarted:
		s.lastClaim = max(s.lastClaim, e.Stored)
		p, ok, err := decodeEvent[events.RunStarted](s, e, own)
		if !ok {
			return err
		}
		f.turn(e, &p)
	case events.StageCompactAfter:
		p, ok, err := decodeEvent[events.CompactAfter](s, e, own)
		if !ok {
			return err
		}
		// The conversation is what the compaction left, from here on.
		s.Messages = append([]events.Message(nil), p.Messages...)
		s.Compactions++
	case events.StageModelResponded:
		p, ok, err := decodeEvent[events.ModelResponded](s, e, own)
		if !ok || f.ends.End(e.ID) != nil {
			return err // a hook ended the run on this reply: the run left it out
		}
		p.Message.Role = events.RoleAssistant
		s.Messages = append(s.Messages, p.Message)
		f.open[e.RunID] = append([]events.ToolCall(nil), p.Message.ToolCalls...)
		for _, c := range p.Message.ToolCalls {
			f.asked[e.RunID+"/"+c.ID] = true
		}
	case events.StageToolAfter:
		p, ok, err := decodeEvent[events.ToolAfter](s, e, own)
		if !ok {
			return err
		}
		f.result(e, &p, own)
	case events.StageStop:
		p, ok, err := decodeEvent[events.Stop](s, e, own)
		if ok && p.Continue != "" {
			s.Messages = append(s.Messages, continueMessage(p.Continue))
		}
		return err
	case events.StageRunCompleted, events.StageRunFailed:
		s.Messages = appendNoResults(s.Messages, f.open[e.RunID])
		delete(f.open, e.RunID)
	}
	return nil
}

// turn folds a run.started: a new run's turn gives its prompt, after the
// open calls of the runs before it (one taken over, say) are answered, so
// that every call is followed by its result, as providers require. A
// resumed attempt's prompt is in already.
func (f *sessionFold) turn(e *events.Event, p *events.RunStarted) {
	s := f.s
	if _, seen := s.prompts[e.RunID]; seen {
		return
	}
	for run, calls := range f.open {
		if run == f.mine || len(calls) == 0 {
			continue
		}
		s.Messages = appendNoResults(s.Messages, calls)
		for _, c := range calls {
			f.answered[run+"/"+c.ID] = true
		}
		delete(f.open, run)
	}
	s.prompts[e.RunID] = len(s.Messages)
	if p.Prompt != "" { // a compaction run has none
		s.Messages = append(s.Messages, events.Message{Role: events.RoleUser, Content: p.Prompt})
	}
}

// result folds a tool.after: the call's result, unless another run's turn
// answered the call already, or the call was made before the session's
// last compaction.
func (f *sessionFold) result(e *events.Event, p *events.ToolAfter, own bool) {
	key := e.RunID + "/" + p.Call.ID
	if f.late[e] || !slices.ContainsFunc(f.open[e.RunID], func(c events.ToolCall) bool { return c.ID == p.Call.ID }) && f.answered[key] {
		return // answered when another run's turn started
	}
	if !own && !f.asked[key] {
		// Another run's result for a call made before the session's last
		// compaction (a run taken over records its calls' outcome when it
		// closes, which may be after a compaction): the compaction's
		// messages stand for that call.
		return
	}
	f.s.Messages = append(f.s.Messages, toolMessage(p))
	f.open[e.RunID] = removeCall(f.open[e.RunID], p.Call.ID)
}

// lateResults marks the tool.after events of runs other than mine stored
// after another run's turn started (its first run.started) since the reply
// that made the call: that turn answered the call with no result (a run
// taken over records the outcome of its calls when it closes, after the
// run that took the session), so the conversation, in stream order or by
// run, has one result per call. It is nil when there is none.
func lateResults(evs []*events.Event, mine string) map[*events.Event]bool {
	first := map[string]uint64{} // the stream sequence of each run's first run.started
	for _, e := range evs {
		if e.Stage == events.StageRunStarted && (first[e.RunID] == 0 || e.Stored < first[e.RunID]) {
			first[e.RunID] = e.Stored
		}
	}
	if len(first) < 2 {
		return nil
	}
	turns := make([]uint64, 0, len(first))
	for _, t := range first {
		turns = append(turns, t)
	}
	slices.Sort(turns)
	// after reports whether a run's turn started between stream sequences
	// from and to; from is at or after the turn of the run asking, so the
	// turn is another run's.
	after := func(from, to uint64) bool {
		i, _ := slices.BinarySearch(turns, from+1)
		return i < len(turns) && turns[i] < to
	}
	candidates := map[string]bool{} // runs with a tool.after stored after another run's turn
	for _, e := range evs {
		if e.Stage == events.StageToolAfter && e.RunID != mine && first[e.RunID] != 0 && after(first[e.RunID], e.Stored) {
			candidates[e.RunID] = true
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	asked := map[string]uint64{} // run/call: the stream sequence of the reply that made the call
	late := map[*events.Event]bool{}
	for _, e := range evs {
		if !candidates[e.RunID] {
			continue
		}
		switch e.Stage {
		case events.StageModelResponded:
			p, err := events.Data[events.ModelResponded](e)
			if err != nil {
				continue
			}
			for _, c := range p.Message.ToolCalls {
				asked[e.RunID+"/"+c.ID] = e.Stored
			}
		case events.StageToolAfter:
			p, err := events.Data[events.ToolAfter](e)
			if err != nil {
				continue
			}
			if at, ok := asked[e.RunID+"/"+p.Call.ID]; ok && after(at, e.Stored) {
				late[e] = true
			}
		}
	}
	return late
}

// appendNoResults answers calls that will get no result.
func appendNoResults(msgs []events.Message, calls []events.ToolCall) []events.Message {
	for _, c := range calls {
		msgs = append(msgs, events.Message{Role: events.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: NoResultContent})
	}
	return msgs
}

func removeCall(calls []events.ToolCall, id string) []events.ToolCall {
	for i, c := range calls {
		if c.ID == id {
			return append(calls[:i:i], calls[i+1:]...)
		}
	}
	return calls
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

// decodeEvent decodes e's data as T, its stage's payload. An event of the
// run being resumed (mine) that does not decode is an error: the run cannot
// go on from a record it cannot read. Any other is skipped: decodeEvent
// returns false and lists it in s.Skipped.
func decodeEvent[T any](s *Session, e *events.Event, mine bool) (T, bool, error) {
	p, err := events.Data[T](e)
	if err == nil {
		return p, true, nil
	}
	err = fmt.Errorf("%w: %v", ErrCorruptSession, err)
	if mine {
		return p, false, err
	}
	s.Skipped = append(s.Skipped, err)
	return p, false, nil
}
