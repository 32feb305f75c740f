package record

import (
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// Decisions holds what the hooks decided on the events whose chain a
// decision ended, by the id of the event decided on (hook.decided and
// hook.failed carry it), as the chain's result read back from the record.
type Decisions map[string]*interceptors.ChainResult

// Add records e when it is a decision that ended a chain (deny, stop,
// mock, ask), or a failure that denied the event (policy fail). A record
// that does not decode, or of a shadow hook, decides nothing.
func (d Decisions) Add(e *events.Event) {
	switch e.Stage {
	case events.StageHookDecided:
		p, err := events.Data[events.HookDecided](e)
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

// End returns the decision on event id that ended the run (deny, stop),
// or nil.
func (d Decisions) End(id string) *interceptors.ChainResult {
	if out := d[id]; out != nil && (out.Decision == interceptors.Deny || out.Decision == interceptors.Stop) {
		return out
	}
	return nil
}
