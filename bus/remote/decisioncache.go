package remote

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/hookbus/hookbus/bus/internal/kvstore"
	"github.com/nats-io/nats.go/jetstream"
)

// DecisionCache is the decision cache of prompt hooks over the KV bucket
// hookbus_decisions (bus.Names.Decisions): a hook's decision on an input, kept
// for a while and shared by every worker, so that the same question is put
// to a model once per TTL rather than once per worker and per event. Each
// entry expires on its own (a per-key TTL; the bucket is provisioned with
// limit markers, which per-key TTLs need), and none outlives the bucket's
// MaxAge (bus.DecisionCacheMaxAge); Get says when the server stored an entry,
// so a reader can bound its age whatever its writer claimed. The cache stores opaque values:
// package hooks/prompt decides what a key and a value are
// (docs/PROTOCOL.md, "Decision cache"). It is safe for concurrent use and
// opens the bucket on first use.
type DecisionCache struct {
	b  *bus.Bus
	kv *kvstore.Bucket
}

// MinDecisionTTL is the shortest TTL of a decision cache entry: JetStream
// counts message TTLs in whole seconds.
const MinDecisionTTL = time.Second

// NewDecisionCache returns the decision cache of b's bucket. It does no
// I/O.
func NewDecisionCache(b *bus.Bus) *DecisionCache {
	return &DecisionCache{b: b, kv: kvstore.NewBucket(b.JetStream(), b.Names().Decisions, ErrDecisionCache)}
}

// Get returns the value stored under key, when the server stored it, and
// true; or false when there is none (never stored, or expired). The error
// wraps ErrDecisionCache (a bad key, a missing bucket, a failed read).
func (c *DecisionCache) Get(ctx context.Context, key string) ([]byte, time.Time, bool, error) {
	if err := checkDecisionKey(key); err != nil {
		return nil, time.Time{}, false, err
	}
	ctx, cancel := deadline.Default(ctx, c.b.Timeout())
	defer cancel()
	kv, err := c.kv.KV(ctx)
	if err != nil {
		return nil, time.Time{}, false, err
	}
	e, err := kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return nil, time.Time{}, false, nil
	case err != nil:
		return nil, time.Time{}, false, c.kv.Err(ctx, "get "+key+" from", err)
	}
	return e.Value(), e.Created(), true, nil
}

// Put stores value under key for ttl (at least MinDecisionTTL). When the
// key already holds a live value (another worker decided the same input
// first), that value stays and Put returns nil: both decided the same
// question. The error wraps ErrDecisionCache.
func (c *DecisionCache) Put(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := checkDecisionKey(key); err != nil {
		return err
	}
	if ttl < MinDecisionTTL {
		return fmt.Errorf("%w: ttl %s of key %s is shorter than %s", ErrDecisionCache, ttl, key, MinDecisionTTL)
	}
	if ttl > bus.DecisionCacheMaxAge {
		return fmt.Errorf("%w: ttl %s of key %s is longer than the bucket keeps entries (%s)", ErrDecisionCache, ttl, key, bus.DecisionCacheMaxAge)
	}
	ctx, cancel := deadline.Default(ctx, c.b.Timeout())
	defer cancel()
	kv, err := c.kv.KV(ctx)
	if err != nil {
		return err
	}
	_, err = kv.Create(ctx, key, value, jetstream.KeyTTL(ttl.Round(time.Second)))
	if err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return c.kv.Err(ctx, "put "+key+" in", err)
	}
	return nil
}

// checkDecisionKey holds a key to what a KV key may be: tokens of letters,
// digits, '-', '_', '/' and '=' separated by single dots.
func checkDecisionKey(key string) error {
	for tok := range strings.SplitSeq(key, ".") {
		if tok == "" || !kvstore.KeyChars(tok) {
			return fmt.Errorf("%w: key %q is not a key-value key (letters, digits, - _ / = in dot-separated tokens)", ErrDecisionCache, key)
		}
	}
	return nil
}
