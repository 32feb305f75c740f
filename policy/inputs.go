package policy

import (
	"sync/atomic"
	"unsafe"

	"github.com/hookbus/hookbus/events"
)

// Inputs shares the Input read from an event among the policies that
// decide on it (WithInputs): the chain calls each policy with the same
// event until one of them changes the payload, so the call is read from
// the payload once per decision, not once per policy. It holds the last
// event read, and is safe for concurrent use (concurrent decisions each
// read their own, at worst once per policy).
type Inputs struct {
	last atomic.Pointer[sharedInput]
}

// NewInputs returns an empty Inputs.
func NewInputs() *Inputs { return &Inputs{} }

// sharedInput is an Input and the event, and the payload, it was read
// from.
type sharedInput struct {
	ev   *events.Event
	data *byte
	n    int
	in   *Input
}

// inputFor is InputFrom(ev, ""), read once while ev and its payload stay
// the same (events are read only on the chain; a change of payload is a
// new event).
func (s *Inputs) inputFor(ev *events.Event) (*Input, error) {
	data := unsafe.SliceData(ev.Data)
	if l := s.last.Load(); l != nil && l.ev == ev && l.data == data && l.n == len(ev.Data) {
		return l.in, nil
	}
	in, err := InputFrom(ev, "")
	if err != nil {
		return nil, err
	}
	s.last.Store(&sharedInput{ev: ev, data: data, n: len(ev.Data), in: in})
	return in, nil
}
