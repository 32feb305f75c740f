package bus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// msgFunc handles one message of an ordered read; done ends the read.
type msgFunc func(m jetstream.Msg, meta *jetstream.MsgMetadata) (done bool, err error)

// readOrdered reads the events stream with an ordered consumer (Consume:
// no goroutine hand-off per message) and calls handle for each message
// matching filters, in stream order, until handle is done or fails (its
// error is returned), ctx is done (ctx's error), or the read cannot go on
// (ErrConsumer: connection closed, stream gone). handle is never called
// after readOrdered returned. The consumer is deleted on return rather than
// left to the server's 5-minute inactivity clean-up (a worker replays a
// session at every run).
func (b *Bus) readOrdered(ctx context.Context, filters []string, policy jetstream.DeliverPolicy, since time.Time, from uint64, handle msgFunc) error {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: filters, DeliverPolicy: policy}
	if from > 0 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = from
	} else if !since.IsZero() {
		cfg.DeliverPolicy = jetstream.DeliverByStartTimePolicy
		cfg.OptStartTime = &since
	}
	rctx, cancel := b.withTimeout(ctx)
	cons, err := b.js.OrderedConsumer(rctx, b.names.Events, cfg)
	err = deadline.Err(rctx, err)
	cancel()
	if err != nil {
		return fmt.Errorf("%w: ordered consumer: %w", ErrConsumer, err)
	}

	var (
		mu      sync.Mutex // held while handle runs
		stopped bool
		result  = make(chan error, 1)
	)
	finish := func(err error) { // mu held
		if !stopped {
			stopped = true
			result <- err
		}
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		meta, err := m.Metadata()
		if err != nil {
			finish(fmt.Errorf("%w: %w", ErrConsumer, err))
			return
		}
		if done, err := handle(m, meta); done || err != nil {
			finish(err)
		}
	}, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		if errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, jetstream.ErrStreamNotFound) {
			mu.Lock()
			finish(fmt.Errorf("%w: %w", ErrConsumer, err))
			mu.Unlock()
			return
		}
		b.log.Debug("hookbus: ordered consumer recovering", "error", err) // it resets itself
	}))
	if err != nil {
		b.deleteOrdered(cons)
		return fmt.Errorf("%w: ordered consumer: %w", ErrConsumer, err)
	}
	var rerr error
	select {
	case rerr = <-result:
	case <-ctx.Done():
		mu.Lock() // waits for a running handle
		if stopped {
			rerr = <-result
		} else {
			stopped = true
			rerr = ctx.Err()
		}
		mu.Unlock()
	}
	cc.Stop()
	b.deleteOrdered(cons)
	return rerr
}

func (b *Bus) deleteOrdered(cons jetstream.Consumer) {
	info := cons.CachedInfo()
	if info == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.opts.timeout)
	defer cancel()
	if err := b.js.DeleteConsumer(ctx, b.names.Events, info.Name); err != nil {
		b.log.Debug("hookbus: ordered consumer not deleted", "consumer", info.Name, "error", err)
	}
}

// decodeMsg decodes m, counting and logging a malformed message (nil event).
func (b *Bus) decodeMsg(m jetstream.Msg, meta *jetstream.MsgMetadata, malformed *int) *events.Event {
	e, err := b.decodeStored(m.Subject(), m.Headers(), m.Data())
	if err != nil {
		*malformed++
		b.log.Warn("hookbus: malformed event skipped", "subject", m.Subject(), "stream_seq", meta.Sequence.Stream, "reason", err)
		return nil
	}
	e.Stored = meta.Sequence.Stream
	return e
}
