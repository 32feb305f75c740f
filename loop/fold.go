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
