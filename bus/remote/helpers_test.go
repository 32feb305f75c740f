package remote_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
)

// testEvent and sizedEvent build valid events (bustest.Event, SizedEvent).
var (
	testEvent  = bustest.Event
	sizedEvent = bustest.SizedEvent
)

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
