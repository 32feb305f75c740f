package tlogbus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// DefaultMaxLag is how long a message may wait to be checkpointed before
// Ready says the checkpointer is not ready, unless the interval is longer
// (then four intervals).
const DefaultMaxLag = time.Minute

// MaxLag is the lag Ready allows with maxLag given: maxLag when positive,
// otherwise DefaultMaxLag or four intervals, the longer.
func (c *Checkpointer) MaxLag(maxLag time.Duration) time.Duration {
	if maxLag > 0 {
		return maxLag
	}
	return max(DefaultMaxLag, 4*c.cfg.Interval)
}

// Ready reports whether the checkpointer is keeping the log: its durable
// consumer exists and is not paused, and no message of the events stream
// has waited longer than MaxLag(maxLag) for a stored checkpoint to cover
// it. It is the checkpointer's readiness probe (/readyz): a checkpointer
// that runs but checkpoints nothing is not ready. The error wraps
// ErrNotReady, saying why, or the error of a read that failed.
func (c *Checkpointer) Ready(ctx context.Context, maxLag time.Duration) error {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	cons, err := c.b.JetStream().Consumer(ctx, c.b.Names().Events, c.cfg.Durable)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		return fmt.Errorf("%w: its durable consumer %s of %s is gone", ErrNotReady, c.cfg.Durable, c.b.Names().Events)
	case err != nil:
		return fmt.Errorf("checkpointer consumer %s: %w", c.cfg.Durable, err)
	}
	if info := cons.CachedInfo(); info.Paused {
		return fmt.Errorf("%w: its durable consumer %s is paused (for %s more)", ErrNotReady, c.cfg.Durable, info.PauseRemaining.Round(time.Second))
	}
	covered := c.Status().Size
	next, err := c.b.GetStored(ctx, covered+1)
	if err != nil || next == nil {
		return err
	}
	lag, allowed := time.Since(next.Time), c.MaxLag(maxLag)
	if lag > allowed {
		return fmt.Errorf("%w: seq %d was stored %s ago and no checkpoint covers it yet (the last covers %d; allowed lag %s)",
			ErrNotReady, next.Seq, lag.Round(time.Second), covered, allowed)
	}
	return nil
}
