package policytest

import (
	"context"
	"sync"
	"time"

	"github.com/hookbus/hookbus/policy"
)

// replayHistory is what a replay's policies read of history: the
// session's earlier calls from a policy.Memory fed with the record in
// order, and counters whose windows run on the recorded time of the call
// being replayed, not the wall clock: a limit of 200 calls an hour counts
// the calls of the hour they were made in, however fast the replay.
type replayHistory struct {
	*policy.Memory
	now func() time.Time // the recorded time of the event being replayed

	mu      sync.Mutex
	windows map[policy.CounterKey]*window
}

// window is one counter window's additions, in time order.
type window struct {
	at  []time.Time
	val []float64
	sum float64
}

func newReplayHistory(now func() time.Time) *replayHistory {
	return &replayHistory{Memory: policy.NewMemory(), now: now, windows: map[policy.CounterKey]*window{}}
}

// Counter implements policy.History: the window's sum before the call
// being replayed.
func (h *replayHistory) Counter(_ context.Context, k policy.CounterKey) (float64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.windows[k]
	if w == nil {
		return 0, nil
	}
	w.expire(h.now().Add(-k.Window))
	return w.sum, nil
}

// Add implements policy.History: v counted at the recorded time of the
// call being replayed.
func (h *replayHistory) Add(_ context.Context, k policy.CounterKey, v float64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.windows[k]
	if w == nil {
		w = &window{}
		h.windows[k] = w
	}
	w.at, w.val, w.sum = append(w.at, h.now()), append(w.val, v), w.sum+v
	return nil
}

// expire drops the additions made before from.
func (w *window) expire(from time.Time) {
	n := 0
	for n < len(w.at) && w.at[n].Before(from) {
		w.sum -= w.val[n]
		n++
	}
	w.at, w.val = w.at[n:], w.val[n:]
}
