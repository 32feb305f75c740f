package budgets

import (
	"context"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// limits is a Budgets' copy of the limits (the bucket's limit.* keys),
// followed by a watch from the first Limit on, so that a step's Reserve
// and Charge read no limit from the server: an agent without a budget
// costs no request at all. Until the watch has loaded the limits, and after
// it ends (the connection closed), Limit reads the key as before.
//
// A limit set or removed elsewhere applies once the watch delivers it (a
// few milliseconds); one set or removed through this Budgets applies at
// once. Revisions order the two: an older value never replaces a newer.
type limits struct {
	mu      sync.Mutex
	state   watchState
	byAgent map[string]heldLimit // the agents with a limit entry (or a bad one)
	revs    map[string]uint64    // the last revision applied, by key
}

type watchState int

const (
	notWatched watchState = iota
	loading
	following
	unwatched // the watch could not start, or ended: read each time
)

// heldLimit is one agent's limit as held: the limit, or why it cannot be
// read.
type heldLimit struct {
	l   Limit
	err error
}

// held returns agent's limit from the copy; false when the copy cannot
// answer (not loaded yet, or not followed).
func (s *Budgets) held(agent string) (Limit, bool, error, bool) {
	s.lim.mu.Lock()
	defer s.lim.mu.Unlock()
	if s.lim.state != following {
		return Limit{}, false, nil, false
	}
	h, ok := s.lim.byAgent[agent]
	return h.l, ok && h.err == nil, h.err, true
}

// follow starts the watch of the limits once; a caller that finds it
// started (or failed) returns at once.
func (s *Budgets) follow(ctx context.Context, kv jetstream.KeyValue) {
	s.lim.mu.Lock()
	if s.lim.state != notWatched {
		s.lim.mu.Unlock()
		return
	}
	s.lim.state = loading
	s.lim.mu.Unlock()

	// ctx bounds the start and the initial load; the watch lasts as long as
	// the connection.
	wctx, cancel := context.WithCancel(context.Background())
	unbind := context.AfterFunc(ctx, cancel)
	w, err := kv.Watch(wctx, "limit.>")
	if err != nil {
		unbind()
		cancel()
		if ctx.Err() != nil {
			s.setState(notWatched) // the next Limit tries again
		} else {
			s.setState(unwatched)
		}
		return
	}
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				unbind()
				cancel()
				s.setState(unwatched)
				return
			}
			if e == nil { // the current values are in
				if !unbind() { // ctx ended just now: the watch is canceled
					s.setState(notWatched)
					return
				}
				s.setState(following)
				go s.watch(w)
				return
			}
			s.apply(e)
		case <-ctx.Done():
			unbind()
			cancel()
			_ = w.Stop()
			s.setState(notWatched) // the next Limit tries again
			return
		}
	}
}

// watch applies the changes until the watch ends.
func (s *Budgets) watch(w jetstream.KeyWatcher) {
	for e := range w.Updates() {
		if e != nil {
			s.apply(e)
		}
	}
	s.setState(unwatched)
}

func (s *Budgets) setState(st watchState) {
	s.lim.mu.Lock()
	defer s.lim.mu.Unlock()
	s.lim.state = st
}

// apply records one limit entry (a put, or a delete or purge marker).
func (s *Budgets) apply(e jetstream.KeyValueEntry) {
	agent := e.Key()[len("limit."):]
	var h heldLimit
	put := e.Operation() == jetstream.KeyValuePut
	if put {
		h.l, h.err = decodeLimit(e)
	}
	s.hold(agent, e.Revision(), h, put)
}

// hold records agent's limit at rev (present: a put) unless a later
// revision is already held.
func (s *Budgets) hold(agent string, rev uint64, h heldLimit, present bool) {
	s.lim.mu.Lock()
	defer s.lim.mu.Unlock()
	if s.lim.byAgent == nil {
		s.lim.byAgent, s.lim.revs = map[string]heldLimit{}, map[string]uint64{}
	}
	if rev <= s.lim.revs[agent] {
		return
	}
	s.lim.revs[agent] = rev
	if present {
		s.lim.byAgent[agent] = h
	} else {
		delete(s.lim.byAgent, agent)
	}
}
