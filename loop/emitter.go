package loop

import (
	"context"

	"github.com/hookbus/hookbus/bus"
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

// Fencer is an Emitter that fences a run's write-ahead publishes, so that a
// session has one writer: each attempt claims the session with its
// run.started, and its tool.before, run.completed and run.failed are stored
// only while that claim is the session's last. A worker that lost its run
// (paused past its lease while another worker took the run over) can then
// neither start a tool nor end the run. *bus.Bus implements it; the engine
// uses it when its Emitter does.
type Fencer interface {
	Claim(ctx context.Context, e *events.Event) (bus.Fence, error)
	// PublishFenced returns an error matching bus.ErrFenced (a
	// *bus.FencedError naming the claim) when another attempt claimed the
	// session; it may move f past foreign messages.
	PublishFenced(ctx context.Context, e *events.Event, f *bus.Fence) error
}
