package harness_test

import (
	"testing"
	"time"

	"github.com/hookbus/hookbus/hooks/harness"
)

// The bridge's deadline is its own bound, inside the harness's limit by a
// margin of a tenth of it (250 ms to 2 s).
func TestWithin(t *testing.T) {
	for _, tc := range []struct{ limit, bound, want time.Duration }{
		{0, 30 * time.Second, 30 * time.Second},                              // no limit known
		{1500 * time.Millisecond, 30 * time.Second, 1250 * time.Millisecond}, // Claude Code's SessionEnd
		{3 * time.Second, 30 * time.Second, 2700 * time.Millisecond},         // Codex CLI's SessionEnd cap
		{10 * time.Second, 30 * time.Second, 9 * time.Second},                // Claude Code's MessageDisplay
		{600 * time.Second, 30 * time.Second, 30 * time.Second},              // the bound is smaller
		{600 * time.Second, 10 * time.Minute, 598 * time.Second},             // the margin's cap
		{400 * time.Millisecond, time.Second, 150 * time.Millisecond},        // the margin's floor
		{200 * time.Millisecond, time.Second, 100 * time.Millisecond},        // a limit under the margin: half of it
	} {
		if got := harness.Within(tc.limit, tc.bound); got != tc.want {
			t.Errorf("Within(%s, %s) = %s, want %s", tc.limit, tc.bound, got, tc.want)
		}
	}
}
