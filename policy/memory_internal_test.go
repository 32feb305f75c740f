package policy

import (
	"context"
	"testing"
	"time"
)

// A counter's window forgets what is older than it.
func TestMemoryWindow(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	m := NewMemory()
	m.now = func() time.Time { return now }
	k := CounterKey{Policy: "p", Counter: "c", Key: "a", Window: time.Hour}
	for i := range 3000 {
		if err := m.Add(ctx, k, 1); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 999 {
			now = now.Add(30 * time.Minute)
		}
	}
	// Added: 1000 at 10:00, 1000 at 10:30, 1000 at 11:00; now 11:30.
	if n, _ := m.Counter(ctx, k); n != 2000 {
		t.Errorf("sum at 11:30 = %v, want 2000 (those of 10:30 and 11:00)", n)
	}
	now = now.Add(time.Hour)
	if n, _ := m.Counter(ctx, k); n != 0 {
		t.Errorf("sum at 12:30 = %v, want 0", n)
	}
}
