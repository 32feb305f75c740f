package interceptors

import (
	"sync"

	"github.com/hookbus/hookbus/events"
)

// Memo is what the calls of one run share: a transport keeps there what it
// derived from the run's event (its wire form, say) so that the run's next
// call on the same event reuses it instead of deriving it again, as
// remote.Client does with the encoded request. The chain gives every call
// of a run with more than one call the same Memo (Request.Memo); an
// interceptor that changes the payload makes a new event, for which nothing
// is kept yet. A Memo is safe for concurrent use; a nil Memo keeps nothing.
type Memo struct {
	mu sync.Mutex
	ev *events.Event
	v  any
}

// Load returns what Store kept for ev, or nil.
func (m *Memo) Load(ev *events.Event) any {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ev != ev {
		return nil
	}
	return m.v
}

// Store keeps v for ev, in place of what was kept.
func (m *Memo) Store(ev *events.Event, v any) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ev, m.v = ev, v
}
