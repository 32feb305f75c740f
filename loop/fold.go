package loop

import (
	"fmt"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// A session's record is folded in two: foldSession turns the session's
// events into its conversation (session.go), foldRun turns one run's
// events into where that run is (runstate.go). Both read the effective
// record (record.Effective): each run's events in seq order, without the
// events of an attempt that a later attempt superseded.

// truncated cuts run's events (in seq order, as record.Effective gives them) at
// their first hole: an event whose seq is not the one after its
// predecessor's, and every later one of the run. Appends are asynchronous between write-ahead points, so
// after a fault (a cluster's leader killed) an event may be lost while a
// later one of the same attempt is stored; the attempt then stops
// unrecorded at its next flush, and the attempt that resumes the run reads
// it up to the hole: its run.started takes the missing seq and so
// supersedes what was stored after it (events.Superseded). Only write-ahead
// events (tool.before, tool.result) say a tool ran, and nothing is written
// ahead past a hole: the flush before it fails. A run's events start at the
// first seq read (a read bounded by a compaction starts mid-run); events
// without a seq (shadow records) and other runs' events are kept as they
// are: only the run being resumed is cut, and only when it has no end (the conversation of a session, as
// RebuildSession gives it, keeps every run's stored events).
func truncated(evs []*events.Event, run string) []*events.Event {
	var (
		next uint64 // the seq the run's next event must have; 0: none seen yet
		cut  = -1   // the index of the first event cut
	)
	for i, e := range evs {
		if e.RunID != run || e.Seq == 0 {
			continue
		}
		if next != 0 && e.Seq != next && cut < 0 {
			cut = i
		}
		if e.Stage.Terminal() {
			return evs // ended: its end is written after a flush of all before it
		}
		next = e.Seq + 1
	}
	if cut < 0 {
		return evs
	}
	out := append(make([]*events.Event, 0, len(evs)), evs[:cut]...)
	for _, e := range evs[cut:] {
		if e.RunID != run || e.Seq == 0 {
			out = append(out, e)
		}
	}
	return out
}

// decisions holds what the hooks decided on the events whose chain a
// decision ended, by the id of the event decided on (hook.decided and
// hook.failed carry it), as the chain's result read back from the record.
type decisions map[string]*interceptors.ChainResult

// add records e when it is a decision that ended a chain (deny, stop, mock,
// ask), or a failure that denied the event (policy fail).
func (d decisions) add(e *events.Event) {
	switch e.Stage {
	case events.StageHookDecided:
		p, err := events.Data[events.HookDecided](e) // audit only: one that does not decode ends nothing
		if err != nil || p.EventID == "" || p.Shadow {
			return
		}
		switch interceptors.Kind(p.Decision) {
		case interceptors.Deny, interceptors.Stop, interceptors.Mock, interceptors.Ask:
			d[p.EventID] = interceptors.RecordedResult(&p)
		}
	case events.StageHookFailed:
		p, err := events.Data[events.HookFailed](e)
		if err != nil || p.EventID == "" || p.Outcome != interceptors.FailedClosed {
			return
		}
		d[p.EventID] = interceptors.RecordedFailure(&p)
	}
}

// ended returns the end a recorded decision put to the run (deny, stop),
// or nil.
func (d decisions) ended(eventID string) *errEnd {
	out := d[eventID]
	if out == nil {
		return nil
	}
	return endOf(out)
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
