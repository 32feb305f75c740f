package prompt

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// Cache keeps the decisions of prompt hooks for a while, shared by every
// hook (and every worker) that uses it. Values are opaque to it. A
// *bus.DecisionCache is one over the KV bucket hookbus_decisions;
// MemoryCache is one in a process.
type Cache interface {
	// Get returns the value stored under key and true, or false when
	// there is none.
	Get(ctx context.Context, key string) (value []byte, found bool, err error)
	// Put stores value under key for ttl. A key that already holds a live
	// value keeps it.
	Put(ctx context.Context, key string, value []byte, ttl time.Duration) error
}

// entry is a cached decision: the verdict, when it expires (checked on
// read, whatever the cache's own expiry), and the model that gave it.
type entry struct {
	Verdict
	ExpiresAt time.Time `json:"expires_at"`
	Model     string    `json:"model,omitempty"`
}

// readEntry decodes a cached value; a value that does not decode, or has
// expired by now, is a miss.
func readEntry(value []byte, now time.Time) (entry, bool) {
	var e entry
	if json.Unmarshal(value, &e) != nil || !now.Before(e.ExpiresAt) {
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

// Get returns the live value stored under key.
func (c *MemoryCache) Get(_ context.Context, key string) ([]byte, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || !c.now().Before(e.expires) {
		return nil, false, nil
	}
	return e.value, true, nil
}

// Put stores value under key for ttl, unless key holds a live value.
func (c *MemoryCache) Put(_ context.Context, key string, value []byte, ttl time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if e, ok := c.m[key]; ok && now.Before(e.expires) {
		return nil
	}
	c.m[key] = memEntry{value: append([]byte(nil), value...), expires: now.Add(ttl)}
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
