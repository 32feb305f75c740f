package lazy

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

func TestHandleOpensOnceAndRetriesAfterFailure(t *testing.T) {
	var h Handle[int]
	var opens atomic.Int32
	fail := errors.New("down")
	failing := true
	open := func(context.Context) (int, error) {
		opens.Add(1)
		if failing {
			return 0, fail
		}
		return 7, nil
	}
	if _, err := h.Get(context.Background(), open); !errors.Is(err, fail) {
		t.Fatalf("Get = %v, want %v", err, fail)
	}
	failing = false
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v, err := h.Get(context.Background(), open); err != nil || v != 7 {
				t.Errorf("Get = %d, %v; want 7", v, err)
			}
		}()
	}
	wg.Wait()
	if n := opens.Load(); n != 2 {
		t.Fatalf("opened %d times, want 2 (one failure, then once)", n)
	}
	h.Forget()
	if _, err := h.Get(context.Background(), open); err != nil || opens.Load() != 3 {
		t.Fatalf("after Forget: %v, %d opens; want a new open", err, opens.Load())
	}
}
