package natsconf_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/history"
	"github.com/hookbus/hookbus/policy"
)

// The loop user (workers and the bridge) adds to policies' fleet-wide
// counters and reads them back, with no permission error; the auditor
// reads them and cannot add.
func TestLoopKeepsPolicyCounters(t *testing.T) {
	f := startSingle(t)
	ctx := testContext(t)
	key := policy.CounterKey{Policy: "rate", Counter: "shell_per_agent", Key: "demo", Window: time.Hour}
	lb, loopConn, _ := f.userBus(t, "loop")
	h := history.New(lb)
	for range 3 {
		if err := h.Add(ctx, key, 1); err != nil {
			t.Fatalf("add as loop: %v", err)
		}
	}
	if v, err := h.Counter(ctx, key); err != nil || v != 3 {
		t.Fatalf("counter as loop = %v, %v; want 3", v, err)
	}
	if n, err := h.SessionCount(ctx, policy.Scope{Agent: "demo", Session: "s1"}, "shell", time.Hour); err != nil || n != 0 {
		t.Fatalf("session count as loop = %v, %v", n, err)
	}
	noErrors(t, loopConn)

	ab, _, _ := f.userBus(t, "auditor")
	audit := history.New(ab)
	if v, err := audit.Counter(ctx, key); err != nil || v != 3 {
		t.Fatalf("counter as auditor = %v, %v; want 3", v, err)
	}
	// The server drops the refused publish (a permission violation, which
	// the matrix holds): the add gets no acknowledgement.
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := audit.Add(short, key, 1); err == nil || errors.Is(err, history.ErrInvalid) {
		t.Fatalf("add as auditor = %v; want refused", err)
	}
	if v, err := h.Counter(ctx, key); err != nil || v != 3 {
		t.Fatalf("counter after the auditor's refused add = %v, %v; want 3", v, err)
	}
}
