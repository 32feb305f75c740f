package bridge

import (
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/hookbus/hookbus/record"
)

// Defaults of NewCache.
const (
	// DefaultCacheSessions is the number of sessions a Cache remembers.
	DefaultCacheSessions = 4096
	// DefaultCacheAge is how long a Cache trusts what it remembers of a
	// session: one silent for longer is read again (its last event may
	// have aged out of the stream).
	DefaultCacheAge = 10 * time.Minute
)

// Cache remembers, for the sessions a long-lived process's bridges last
// appended to, where each session stood after that append: its last
// stream sequence, its open run and that run's chain. A bridge given one
// (Config.Cache) takes the next event of such a session from there instead
// of reading the session's last event. The append stays fenced on the
// session's last event as remembered, so that when anybody else wrote to
// the session in between (another gateway, a command hook, a closer of
// idle runs, an approver), the append is refused, the session is
// forgotten, read and appended to again, as without a cache. A session
// whose run ended, that was closed as idle or that was silent for longer
// than the cache's age is forgotten; beyond its size the sessions least
// recently used are. One Cache may serve any number of bridges and
// agents; it is safe for concurrent use.
type Cache struct {
	mu       sync.Mutex
	age      time.Duration
	sessions *simplelru.LRU[cacheKey, *cacheEntry]
}

// NewCache returns a Cache of at most size sessions, each trusted for age
// after its last append (DefaultCacheSessions, DefaultCacheAge when <= 0).
func NewCache(size int, age time.Duration) *Cache {
	if size <= 0 {
		size = DefaultCacheSessions
	}
	if age <= 0 {
		age = DefaultCacheAge
	}
	sessions, _ := simplelru.NewLRU[cacheKey, *cacheEntry](size, nil)
	return &Cache{age: age, sessions: sessions}
}

// Len returns the number of sessions remembered.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions.Len()
}

type cacheKey struct{ agent, session string }

// cacheEntry is a session's state as a bridge left it, without the events
// themselves: the open run's chain instead of its last event.
type cacheEntry struct {
	at                                  time.Time // of the append
	last                                uint64
	run                                 string
	started, intake, intakeKnown, ended bool
	chain                               record.Chain
}

// get returns the state remembered of the session, a copy of its own;
// nil when there is none, or when it cannot say whether the open run has
// an intake and needIntake asks.
func (c *Cache) get(agent, session string, needIntake bool) *state {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := cacheKey{agent, session}
	e, ok := c.sessions.Peek(k)
	if !ok {
		return nil
	}
	if time.Since(e.at) > c.age {
		c.sessions.Remove(k)
		return nil
	}
	if needIntake && !e.intakeKnown {
		return nil
	}
	c.sessions.Get(k) // most recently used
	return &state{last: e.last, run: e.run, started: e.started, intake: e.intake, intakeKnown: e.intakeKnown, ended: e.ended,
		chains: map[string]record.Chain{e.run: e.chain}}
}

// put remembers st, the session's state after an append, unless a later
// one is remembered already; a session whose run ended is forgotten.
func (c *Cache) put(agent, session string, st *state) {
	if c == nil {
		return
	}
	k := cacheKey{agent, session}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.run == "" || !st.open() {
		c.sessions.Remove(k)
		return
	}
	if e, ok := c.sessions.Peek(k); ok && e.last > st.last {
		return // an append stored after st's is remembered
	}
	c.sessions.Add(k, &cacheEntry{at: time.Now(), last: st.last, run: st.run, started: st.started, intake: st.intake,
		intakeKnown: st.intakeKnown, ended: st.ended, chain: st.chain(st.run)})
}

// forget drops the session.
func (c *Cache) forget(agent, session string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sessions.Remove(cacheKey{agent, session})
}
