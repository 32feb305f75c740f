package interceptors

import (
	"sync"

	"github.com/hookbus/hookbus/events"
)

// Memo is what the calls of one run share: a transport keeps there what it
// derived from the run's event (its wire form, say) so that the run's next
// call on the same event reuses it instead of deriving it again, as
// remote.Client does with the encoded request. The chain gives every call
// of a run of more than one interceptor the same Memo (Request.Memo); an
// interceptor that changes the payload makes a new event, for which nothing
// is kept yet. A Memo is safe for concurrent use; a nil Memo keeps nothing.
type Memo struct {
	mu      sync.Mutex
	ev      *events.Event
	v       any
	release func()
	ended   bool
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

// Store keeps v for ev, in place of what was kept. release, when not nil,
// is called once v is no longer kept: when another Store replaces it, when
// the run ends, or at once when it has ended. A call of the run may still
// be running then (a validator abandoned at its timeout): release must
// leave it what it still uses.
func (m *Memo) Store(ev *events.Event, v any, release func()) {
	if m == nil {
		if release != nil {
			release()
		}
		return
	}
	m.mu.Lock()
	old := release
	if !m.ended {
		old = m.release
		m.ev, m.v, m.release = ev, v, release
	}
	m.mu.Unlock()
	if old != nil {
		old()
	}
}

// end drops what m keeps, once the run is over.
func (m *Memo) end() {
	if m == nil {
		return
	}
	m.mu.Lock()
	old := m.release
	m.ev, m.v, m.release, m.ended = nil, nil, nil, true
	m.mu.Unlock()
	if old != nil {
		old()
	}
}
