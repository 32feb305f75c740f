package prompt_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/prompt"
	"github.com/hookbus/hookbus/interceptors"
)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestCacheHit(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	m := replies(`{"ok": false, "reason": "no deletes on Fridays"}`)
	h := newHook(t, prompt.Config{Prompt: "$ARGUMENTS", Model: m, Cache: prompt.NewMemoryCache(clk.now), CacheTTL: time.Minute, Now: clk.now})

	first := run(t, interceptors.Registration{}, h, bashCall(t, "call_1_1", "rm -rf build"))
	if d := first.Records[0].HookDecided(); d.Decision != "deny" || d.Annotations[prompt.AnnotationCache] != "miss" {
		t.Fatalf("first call: hook.decided %+v", d)
	}
	// The same question from another run, another call id: the cached
	// decision, without a model call, marked as a hit.
	second := run(t, interceptors.Registration{}, h, bashCall(t, "call_9_3", "rm -rf build"))
	d := second.Records[0].HookDecided()
	if m.calls() != 1 || d.Decision != "deny" || d.Reason != "no deletes on Fridays" ||
		d.Annotations[prompt.AnnotationCache] != "hit" || d.Annotations[prompt.AnnotationModel] != "test-model" {
		t.Fatalf("second call: model called %d times; hook.decided %+v", m.calls(), d)
	}
	// Another input is another question.
	run(t, interceptors.Registration{}, h, bashCall(t, "call_1_2", "rm -rf dist"))
	if m.calls() != 2 {
		t.Fatalf("another command: model called %d times, want 2", m.calls())
	}
	// The same input on another stage is another hook.
	if h.ID(events.StageToolBefore) == h.ID(events.StageToolAfter) {
		t.Fatal("one id for two stages")
	}
	// After the TTL the model is asked again.
	clk.advance(time.Minute)
	run(t, interceptors.Registration{}, h, bashCall(t, "call_3_1", "rm -rf build"))
	if m.calls() != 3 {
		t.Fatalf("after the TTL: model called %d times, want 3", m.calls())
	}
}

func TestCacheKeyedByHook(t *testing.T) {
	cache := prompt.NewMemoryCache(nil)
	a, b := replies(`{"ok": true}`), replies(`{"ok": false, "reason": "b says no"}`)
	ha := newHook(t, prompt.Config{Prompt: "policy A: $ARGUMENTS", Model: a, Cache: cache})
	hb := newHook(t, prompt.Config{Prompt: "policy B: $ARGUMENTS", Model: b, Cache: cache})
	hc := newHook(t, prompt.Config{Prompt: "policy A: $ARGUMENTS", Model: b, ModelName: "other", Cache: cache})
	ev := bashCall(t, "c1", "make deploy")
	run(t, interceptors.Registration{}, ha, ev)
	if out := run(t, interceptors.Registration{}, hb, ev); out.Decision != interceptors.Deny {
		t.Fatalf("another template reused A's decision: %s", out.Decision)
	}
	if out := run(t, interceptors.Registration{}, hc, ev); out.Decision != interceptors.Deny {
		t.Fatalf("another model reused A's decision: %s", out.Decision)
	}
	if a.calls() != 1 || b.calls() != 2 {
		t.Fatalf("model calls: a %d, b %d; want 1 and 2", a.calls(), b.calls())
	}
}

// failingCache fails every read and write.
type failingCache struct{}

func (failingCache) Get(context.Context, string) ([]byte, time.Time, bool, error) {
	return nil, time.Time{}, false, errors.New("bucket unreachable")
}
func (failingCache) Put(context.Context, string, []byte, time.Duration) error {
	return errors.New("bucket unreachable")
}

func TestCacheFailureIsAWarning(t *testing.T) {
	h := newHook(t, prompt.Config{Prompt: "$ARGUMENTS", Model: replies(`{"ok": false, "reason": "no"}`), Cache: failingCache{}})
	out := run(t, interceptors.Registration{}, h, bashCall(t, "c1", "ls"))
	d := out.Records[0].HookDecided()
	if out.Decision != interceptors.Deny || len(d.Warnings) != 2 || !strings.Contains(d.Warnings[0], "bucket unreachable") {
		t.Fatalf("decision %s, hook.decided %+v", out.Decision, d)
	}
}

// TestCacheSharedOverKV: two hook instances, as on two workers, each with
// its own connection to a real server, share decisions through the KV
// bucket hookbus_decisions: the second never calls its model.
func TestCacheSharedOverKV(t *testing.T) {
	srv, nc1 := bustest.Start(t)
	b1 := bustest.Provision(t, nc1)
	b2, err := bus.New(bustest.Conn(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	m1, m2 := replies(`{"ok": false, "reason": "pushes to main need a review"}`), replies(`{"ok": true}`)
	cfg := prompt.Config{Prompt: "Is this git command safe? $ARGUMENTS", ModelName: "anthropic:claude-haiku-4-5", CacheTTL: time.Minute}
	cfg.Model, cfg.Cache = m1, remote.NewDecisionCache(b1)
	worker1 := newHook(t, cfg)
	cfg.Model, cfg.Cache = m2, remote.NewDecisionCache(b2)
	worker2 := newHook(t, cfg)
	if worker1.ID(events.StageToolBefore) != worker2.ID(events.StageToolBefore) {
		t.Fatal("the same hook has two ids")
	}

	out1 := run(t, interceptors.Registration{}, worker1, bashCall(t, "call_1_1", "git push origin main"))
	out2 := run(t, interceptors.Registration{}, worker2, bashCall(t, "call_4_2", "git push origin main"))
	d1, d2 := out1.Records[0].HookDecided(), out2.Records[0].HookDecided()
	if m1.calls() != 1 || m2.calls() != 0 {
		t.Fatalf("model calls: worker1 %d, worker2 %d; want 1 and 0", m1.calls(), m2.calls())
	}
	if d1.Annotations[prompt.AnnotationCache] != "miss" || d2.Annotations[prompt.AnnotationCache] != "hit" ||
		d2.Decision != "deny" || d2.Reason != "pushes to main need a review" || len(d1.Warnings)+len(d2.Warnings) != 0 {
		t.Fatalf("hook.decided worker1 %+v, worker2 %+v", d1, d2)
	}
}

// keyed records the keys put in its cache.
type keyed struct {
	*prompt.MemoryCache
	keys []string
}

func (k *keyed) Put(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	k.keys = append(k.keys, key)
	return k.MemoryCache.Put(ctx, key, value, ttl)
}

// A writer cannot stretch a cached decision: an entry claiming to expire in
// 2099, stored for a hundred years, is reused for the hook's own TTL after
// it was stored, and no longer.
func TestCacheEntryCannotBeStretched(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	spy := &keyed{MemoryCache: prompt.NewMemoryCache(clk.now)}
	m := replies(`{"ok": false, "reason": "no"}`)
	run(t, interceptors.Registration{}, newHook(t, prompt.Config{Prompt: "$ARGUMENTS", Model: m, Cache: spy, CacheTTL: time.Minute, Now: clk.now}), bashCall(t, "c1", "rm -rf /"))
	if len(spy.keys) != 1 {
		t.Fatalf("keys put: %v", spy.keys)
	}
	forged := prompt.NewMemoryCache(clk.now)
	if err := forged.Put(context.Background(), spy.keys[0], []byte(`{"ok":true,"expires_at":"2099-01-01T00:00:00Z"}`), 100*365*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	h := newHook(t, prompt.Config{Prompt: "$ARGUMENTS", Model: m, Cache: forged, CacheTTL: time.Minute, Now: clk.now})
	clk.advance(2 * time.Minute)
	if out := run(t, interceptors.Registration{}, h, bashCall(t, "c2", "rm -rf /")); out.Decision != interceptors.Deny || m.calls() != 2 {
		t.Fatalf("past the hook's TTL: %s, model asked %d times; want it asked again", out.Decision, m.calls())
	}
}
