package remote_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
)

func TestDecisionCacheGetPut(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	c := remote.NewDecisionCache(b)
	const key = "0123abcd.ffee"
	if v, _, ok, err := c.Get(ctx, key); err != nil || ok || v != nil {
		t.Fatalf("Get of a key never stored = %q, %v, %v; want a miss", v, ok, err)
	}
	if err := c.Put(ctx, key, []byte(`{"ok":false,"reason":"first"}`), time.Minute); err != nil {
		t.Fatal(err)
	}
	// Another worker deciding the same input later keeps the first value.
	if err := remote.NewDecisionCache(b).Put(ctx, key, []byte(`{"ok":true}`), time.Minute); err != nil {
		t.Fatalf("second Put: %v", err)
	}
	before := time.Now()
	v, stored, ok, err := remote.NewDecisionCache(b).Get(ctx, key)
	if err != nil || !ok || string(v) != `{"ok":false,"reason":"first"}` {
		t.Fatalf("Get = %q, %v, %v; want the first value", v, ok, err)
	}
	// The server's time of the first write: what a reader bounds the
	// entry's age by, whatever its value claims.
	if stored.IsZero() || stored.After(before) || before.Sub(stored) > time.Minute {
		t.Fatalf("stored at %v, want the first Put's time (before %v)", stored, before)
	}
}

func TestDecisionCacheEntryExpires(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	c := remote.NewDecisionCache(b)
	if err := c.Put(ctx, "h.short", []byte(`{"ok":true}`), remote.MinDecisionTTL); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(ctx, "h.long", []byte(`{"ok":true}`), time.Hour); err != nil {
		t.Fatal(err)
	}
	bustest.Eventuallyf(t, 10*time.Second, func() bool {
		_, _, ok, err := c.Get(ctx, "h.short")
		return err == nil && !ok
	}, "the 1s entry expires")
	if _, _, ok, err := c.Get(ctx, "h.long"); err != nil || !ok {
		t.Fatalf("the 1h entry: %v, %v; want it still there", ok, err)
	}
	// An expired key can be decided again.
	if err := c.Put(ctx, "h.short", []byte(`{"ok":false,"reason":"again"}`), time.Minute); err != nil {
		t.Fatal(err)
	}
	if v, _, ok, err := c.Get(ctx, "h.short"); err != nil || !ok || !strings.Contains(string(v), "again") {
		t.Fatalf("Get after a new Put = %q, %v, %v", v, ok, err)
	}
}

func TestDecisionCacheBadInput(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	c := remote.NewDecisionCache(b)
	for _, key := range []string{"", "a b", ".a", "a.", "a..b", "a*", "a>"} {
		if _, _, _, err := c.Get(ctx, key); !errors.Is(err, remote.ErrDecisionCache) {
			t.Errorf("Get(%q) = %v, want ErrDecisionCache", key, err)
		}
		if err := c.Put(ctx, key, []byte("x"), time.Minute); !errors.Is(err, remote.ErrDecisionCache) {
			t.Errorf("Put(%q) = %v, want ErrDecisionCache", key, err)
		}
	}
	if err := c.Put(ctx, "k", []byte("x"), 500*time.Millisecond); !errors.Is(err, remote.ErrDecisionCache) || !strings.Contains(err.Error(), "500ms") {
		t.Errorf("Put with a TTL under a second = %v", err)
	}
	if err := c.Put(ctx, "k", []byte("x"), bus.DecisionCacheMaxAge+time.Second); !errors.Is(err, remote.ErrDecisionCache) || !strings.Contains(err.Error(), "longer than the bucket keeps") {
		t.Errorf("Put with a TTL past the bucket's max age = %v", err)
	}
}

func TestDecisionCacheNotProvisioned(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	if err := b.JetStream().DeleteKeyValue(ctx, b.Names().Decisions); err != nil {
		t.Fatal(err)
	}
	_, _, _, err := remote.NewDecisionCache(b).Get(ctx, "k")
	if !errors.Is(err, remote.ErrDecisionCache) || !strings.Contains(err.Error(), "hookbus_decisions") {
		t.Fatalf("Get without the bucket = %v", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := b.CheckProvisioned(cctx); !errors.Is(err, bus.ErrNotProvisioned) || !strings.Contains(err.Error(), "KV_hookbus_decisions") {
		t.Fatalf("CheckProvisioned without the bucket = %v", err)
	}
	if err := b.Provision(cctx); err != nil {
		t.Fatal(err)
	}
	if err := b.CheckProvisioned(cctx); err != nil {
		t.Fatalf("CheckProvisioned after Provision = %v", err)
	}
}
