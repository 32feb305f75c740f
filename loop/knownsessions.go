package loop

import (
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/hookbus/hookbus/events"
)

// Cold starts. A run that is neither a resumption nor a compaction, and
// that no intake hook is registered for, starts, on a session its engine
// has not seen hold events, without reading the session: it takes the
// session for empty. That is proven, not trusted:
// the attempt's first append (its intake) is fenced on the whole session
// being empty (Emitter.AppendAfter after stream sequence 0), and every
// other append before its claim on the one before it, so JetStream's
// leader stores the run's first event only if nothing was stored on the
// session before it. When something was (another worker ran the session, or
// the run's own earlier delivery did), the append is refused, nothing of
// the attempt is stored, and the attempt reads the session and starts again
// as any attempt does. A session the engine has seen hold events (read, or
// written by its own runs) is read first: its runs would only be refused.
// Intake hooks would be asked on the guess (the conversation's length
// among what they are told) and asked again after a refusal, so a run they
// are registered for reads first. See docs/PROTOCOL.md, "One writer per
// session".

// coldStart reports whether a run of req, intercepted by hooks, starts
// without reading its session.
func (e *Engine) coldStart(req *events.RunRequest, hooks Interception) bool {
	switch {
	case e.known == nil, req.Resume, req.ResumeAfter != 0, req.Compact:
		return false
	case hooks != nil && hooks.MatchesCall(events.StageIntake, "", "", req.AgentID) > 0:
		return false
	}
	return !e.known.has(req.AgentID, req.SessionID)
}

// Defaults of Config.
const (
	// DefaultKnownSessions bounds how many sessions an engine remembers
	// having seen hold events.
	DefaultKnownSessions = 16384
	// knownSessionsBytes bounds the bytes of the ids it remembers.
	knownSessionsBytes = 4 << 20
)

// knownSessions is a bounded, least recently used set of the sessions an
// engine has seen hold events, by agent and session id. It is safe for
// concurrent use; a nil *knownSessions knows nothing and remembers nothing.
type knownSessions struct {
	mu       sync.Mutex
	maxBytes int // bytes of the keys
	bytes    int
	set      *simplelru.LRU[string, struct{}]
}

// newKnownSessions returns a set of at most n sessions and maxBytes bytes
// of ids; nil when n is negative (cold starts off).
func newKnownSessions(n, maxBytes int) *knownSessions {
	if n < 0 {
		return nil
	}
	k := &knownSessions{maxBytes: maxBytes}
	k.set, _ = simplelru.NewLRU(max(n, 1), func(key string, _ struct{}) { k.bytes -= len(key) })
	return k
}

func sessionKey(agent, session string) string { return agent + "\x00" + session }

// has reports whether the session was seen holding events (and marks it
// recently used).
func (k *knownSessions) has(agent, session string) bool {
	if k == nil {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.set.Get(sessionKey(agent, session))
	return ok
}

// add remembers that the session holds events, forgetting the least
// recently used sessions beyond the bounds.
func (k *knownSessions) add(agent, session string) {
	if k == nil {
		return
	}
	key := sessionKey(agent, session)
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.set.Get(key); ok {
		return
	}
	k.bytes += len(key)
	k.set.Add(key, struct{}{})
	for k.bytes > k.maxBytes && k.set.Len() > 0 {
		k.set.RemoveOldest()
	}
}

// len returns how many sessions are remembered.
func (k *knownSessions) len() int {
	if k == nil {
		return 0
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.set.Len()
}
