package loop

import (
	"context"

	"github.com/hookbus/hookbus/events"
)

// Emitter publishes a run's events. *bus.Publisher implements it.
type Emitter interface {
	// Publish publishes asynchronously; failures surface at Flush.
	Publish(ctx context.Context, e *events.Event) error
	// PublishSync returns after the stream acknowledged the event (write-ahead).
	PublishSync(ctx context.Context, e *events.Event) error
	// Flush returns once every earlier publish of the run is acknowledged, or
	// with the first failure.
	Flush(ctx context.Context, runID string) error
}

// History reads a session's events back, in stream order. *bus.Bus
// implements it.
type History interface {
	SessionEvents(ctx context.Context, agent, session string) ([]*events.Event, error)
}
