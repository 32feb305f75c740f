package prompt

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// Cache keeps the decisions of prompt hooks for a while, shared by every
// hook (and every worker) that uses it. Values are opaque to it. A
// *remote.DecisionCache is one over the KV bucket hookbus_decisions;
// MemoryCache is one in a process.
type Cache interface {
	// Get returns the value stored under key, when the cache stored it
	// (by the cache's own clock: the server's for the KV bucket), and
	// true; or false when there is none.
	Get(ctx context.Context, key string) (value []byte, stored time.Time, found bool, err error)
	// Put stores value under key for ttl. A key that already holds a live
	// value keeps it.
	Put(ctx context.Context, key string, value []byte, ttl time.Duration) error
}

// entry is a cached decision: the verdict, when its writer said it
// expires, and the model that gave it.
type entry struct {
	Verdict
	ExpiresAt time.Time `json:"expires_at"`
	Model     string    `json:"model,omitempty"`
}

// readEntry decodes a cached value stored at stored. It is live until the
// earlier of its expires_at and stored+ttl, the reader's own TTL: a writer
// cannot stretch an entry past what the reader allows (an entry written
// with expires_at 2099, or a per-key TTL that never ends, is reused for ttl
// after it was stored and no longer). A value that does not decode, has no
// stored time, or is past either bound is a miss.
func readEntry(value []byte, stored, now time.Time, ttl time.Duration) (entry, bool) {
	var e entry
	if json.Unmarshal(value, &e) != nil || stored.IsZero() || !now.Before(e.ExpiresAt) || !now.Before(stored.Add(ttl)) {
		return entry{}, false
	}
	return e, true
}

// MemoryCache is a Cache in one process's memory, for tests and for a
// single worker. Entries expire after their TTL; expired entries are
// dropped as the cache grows. It is safe for concurrent use.
type MemoryCache struct {
	mu    sync.Mutex
	m     map[string]memEntry
	sweep int // the size at which expired entries are next dropped
	now   func() time.Time
}

type memEntry struct {
	value   []byte
	stored  time.Time
	expires time.Time
}

// NewMemoryCache returns an empty cache on the clock now (time.Now when
// nil).
func NewMemoryCache(now func() time.Time) *MemoryCache {
	if now == nil {
		now = time.Now
	}
	return &MemoryCache{m: map[string]memEntry{}, sweep: 64, now: now}
}

// Get returns the live value stored under key and when it was stored.
func (c *MemoryCache) Get(_ context.Context, key string) ([]byte, time.Time, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || !c.now().Before(e.expires) {
		return nil, time.Time{}, false, nil
	}
	return e.value, e.stored, true, nil
}

// Put stores value under key for ttl, unless key holds a live value.
func (c *MemoryCache) Put(_ context.Context, key string, value []byte, ttl time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if e, ok := c.m[key]; ok && now.Before(e.expires) {
		return nil
	}
	c.m[key] = memEntry{value: append([]byte(nil), value...), stored: now, expires: now.Add(ttl)}
	if len(c.m) >= c.sweep {
		for k, e := range c.m {
			if !now.Before(e.expires) {
				delete(c.m, k)
			}
		}
		c.sweep = 2*len(c.m) + 64
	}
	return nil
}

// Len returns how many entries the cache holds, expired ones not yet
// dropped included.
func (c *MemoryCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
