// Package lazy keeps a handle that is opened on first use: a KV bucket, a
// stream. Asking JetStream for one is a request; using the handle is not.
package lazy

import (
	"context"
	"sync"
)

// Handle holds one value opened on first use. Get opens it once per
// Handle, safely for concurrent use; after a failed open, a later Get
// tries again. The zero Handle is ready to use; it must not be copied.
type Handle[T any] struct {
	mu sync.Mutex
	v  T
	ok bool
}

// Get returns the value, calling open the first time (and after a failure
// or Forget). open runs under the Handle's lock: concurrent callers wait
// for it rather than open again.
func (h *Handle[T]) Get(ctx context.Context, open func(context.Context) (T, error)) (T, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ok {
		return h.v, nil
	}
	v, err := open(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	h.v, h.ok = v, true
	return v, nil
}

// Forget drops the value: the next Get opens it again (after a failure
// that says the handle may be stale, such as a stream made again).
func (h *Handle[T]) Forget() {
	h.mu.Lock()
	var zero T
	h.v, h.ok = zero, false
	h.mu.Unlock()
}
