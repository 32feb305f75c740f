package natsconf_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
)

// TestLoopUsesTheDecisionCache: the loop user writes and reads the prompt
// hooks' decision cache (KV hookbus_decisions, entries with a per-key TTL)
// and checks the provisioning with no permission error; the auditor, who
// publishes nothing, cannot write it.
func TestLoopUsesTheDecisionCache(t *testing.T) {
	f := startSingle(t)
	loop, _ := f.connect(t, "loop")
	ctx := testContext(t)
	lb, err := bus.New(loop, bus.WithDefaultTimeout(wait))
	if err != nil {
		t.Fatal(err)
	}
	if err := lb.CheckProvisioned(ctx); err != nil {
		t.Fatalf("CheckProvisioned as loop: %v", err)
	}
	c := lb.DecisionCache()
	if _, ok, err := c.Get(ctx, "hook1.input1"); err != nil || ok {
		t.Fatalf("Get before Put as loop: %v, %v", ok, err)
	}
	if err := c.Put(ctx, "hook1.input1", []byte(`{"ok":true}`), time.Minute); err != nil {
		t.Fatalf("Put as loop: %v", err)
	}
	if v, ok, err := c.Get(ctx, "hook1.input1"); err != nil || !ok || string(v) != `{"ok":true}` {
		t.Fatalf("Get as loop: %q, %v, %v", v, ok, err)
	}
	noErrors(t, loop)

	auditor, errs := f.connect(t, "auditor")
	ab, err := bus.New(auditor, bus.WithDefaultTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := ab.DecisionCache().Put(ctx, "hook1.input2", []byte(`{"ok":false}`), time.Minute); !errors.Is(err, bus.ErrDecisionCache) {
		t.Fatalf("Put as auditor = %v, want it refused", err)
	}
	denyPublish(t, auditor, errs, "$KV.hookbus_decisions.hook1.input2")
}
