package harness

import "time"

// Bounds of the margin Within keeps between the bridge's deadline and the
// harness's.
const (
	MinMargin = 250 * time.Millisecond
	MaxMargin = 2 * time.Second
)

// Within returns the most time the bridge may take on an event the harness
// waits limit for (0: no limit known), given its own bound: the smaller of
// bound and limit less a margin (a tenth of limit, from MinMargin to
// MaxMargin) for the process to start, answer and exit. Claude Code's
// SessionEnd (1.5 s) gets 1.25 s; its MessageDisplay (10 s) 9 s.
func Within(limit, bound time.Duration) time.Duration {
	if limit <= 0 {
		return bound
	}
	margin := min(max(limit/10, MinMargin), MaxMargin)
	d := limit - margin
	if d <= 0 {
		d = limit / 2
	}
	return min(d, bound)
}
