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

// orderedRead is what readOrdered reads: the events stream's messages on
// filters (every message when empty), from stream sequence from (0: by
// policy, or from since when set).
type orderedRead struct {
	filters []string
	policy  jetstream.DeliverPolicy
	since   time.Time
	from    uint64
	// until, when set, is a stream sequence the read must reach: one the
	// stream's leader reported (a read that sees every write stored before
	// it began). The consumer of an ordered read may be placed on any
	// replica of the stream, one that is behind the leader among them;
	// when it goes quiet before until, the read is taken up again from
	// where it was by a new consumer (the server places it anew), and it
	// fails with ErrBehind rather than end short. docs/ARCHITECTURE.md
	// ("Reads that see the latest write") has the rule.
	until uint64
}

// readStall is how long an ordered read that has not reached its until
// waits without a message before it takes the read up again on a new
// consumer.
const readStall = 250 * time.Millisecond

// createTries bounds how often an ordered read asks for its consumer when
// the server does not create it in time.
const createTries = 3

// readOrdered reads the events stream with an ordered consumer (Consume:
// no goroutine hand-off per message) and calls handle for each message
// of r, in stream order, until handle is done or fails (its error is
// returned), ctx is done (ctx's error), or the read cannot go on
// (ErrConsumer: connection closed, stream gone; with ErrBehind: no replica
// delivered up to r.until for the bus' timeout). handle is never called
// after readOrdered returned. The consumer is deleted on return rather
// than left to the server's 5-minute inactivity clean-up (a worker replays
// a session at every run).
func (b *Bus) readOrdered(ctx context.Context, r orderedRead, handle msgFunc) error {
	o := &orderedReader{b: b, r: r, handle: handle, result: make(chan error, 1)}
	// A consumer the server placed on a replica that does not answer in
	// time (catching up, stopped) is asked for again: the server places
	// each one anew.
	err := o.start(ctx, r.from)
	for try := 1; err != nil && try < createTries && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded); try++ {
		b.log.Debug("hookbus: ordered consumer not created in time; asking again", "try", try, "error", err)
		err = o.start(ctx, r.from)
	}
	if err != nil {
		return err
	}
	var tick <-chan time.Time
	if r.until > 0 {
		t := time.NewTicker(readStall / 2)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case rerr := <-o.result:
			o.stop()
			return rerr
		case <-ctx.Done():
			o.mu.Lock() // waits for a running handle
			rerr := ctx.Err()
			if o.stopped {
				rerr = <-o.result
			}
			o.stopped = true
			o.mu.Unlock()
			o.stop()
			return rerr
		case now := <-tick:
			if err := o.check(ctx, now); err != nil {
				return err
			}
		}
	}
}

// orderedReader is one ordered read: the consumer it reads from now, and
// where it is.
type orderedReader struct {
	b      *Bus
	r      orderedRead
	handle msgFunc
	result chan error // the read's end, sent once

	cons jetstream.Consumer
	cc   jetstream.ConsumeContext

	mu      sync.Mutex // held while handle runs
	stopped bool
	gen     int       // the consumer whose messages count
	pos     uint64    // the stream sequence of the last message handled
	quiet   time.Time // since when nothing was handled

	behindSince time.Time // when the read last made progress while behind
	behindAt    uint64
	retakes     int
}

// finish ends the read with err; o.mu is held.
func (o *orderedReader) finish(err error) {
	if !o.stopped {
		o.stopped = true
		o.result <- err
	}
}

// start reads from stream sequence from (0: as o.r says) on a new
// consumer; messages of the consumers before it no longer count.
func (o *orderedReader) start(ctx context.Context, from uint64) error {
	o.mu.Lock()
	o.gen++
	mine := o.gen
	o.quiet = time.Now()
	o.mu.Unlock()
	cons, err := o.b.orderedConsumer(ctx, o.r, from)
	if err != nil {
		return err
	}
	cc, err := cons.Consume(func(m jetstream.Msg) { o.consume(mine, m) },
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, jetstream.ErrStreamNotFound) {
				o.mu.Lock()
				if o.gen == mine {
					o.finish(fmt.Errorf("%w: %w", ErrConsumer, err))
				}
				o.mu.Unlock()
				return
			}
			o.b.log.Debug("hookbus: ordered consumer recovering", "error", err) // it resets itself
		}))
	if err != nil {
		o.b.deleteOrdered(cons)
		return fmt.Errorf("%w: ordered consumer: %w", ErrConsumer, err)
	}
	o.cons, o.cc = cons, cc
	return nil
}

// consume handles m, delivered by consumer gen mine.
func (o *orderedReader) consume(mine int, m jetstream.Msg) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopped || o.gen != mine {
		return
	}
	meta, err := m.Metadata()
	if err != nil {
		o.finish(fmt.Errorf("%w: %w", ErrConsumer, err))
		return
	}
	if meta.Sequence.Stream <= o.pos {
		return // handled already, by the consumer this one took over from
	}
	o.pos = meta.Sequence.Stream
	done, err := o.handle(m, meta)
	o.quiet = time.Now()
	if done || err != nil {
		o.finish(err)
	}
}

// stop stops the current consumer and deletes it.
func (o *orderedReader) stop() {
	o.cc.Stop()
	o.b.deleteOrdered(o.cons)
}

// check, at each tick of a read that must reach o.r.until, takes the read
// up again on a new consumer when the one it is on went quiet before
// until (its replica is behind the leader, or gone quiet), and ends it
// with ErrBehind when no replica delivered more for the bus' timeout.
func (o *orderedReader) check(ctx context.Context, now time.Time) error {
	o.mu.Lock()
	at, idle := o.pos, now.Sub(o.quiet)
	o.mu.Unlock()
	if at >= o.r.until || idle < readStall {
		return nil
	}
	if o.behindSince.IsZero() || at != o.behindAt {
		o.behindSince, o.behindAt = now, at
	}
	if now.Sub(o.behindSince) > o.b.opts.timeout {
		o.mu.Lock()
		o.finish(fmt.Errorf("%w: %w: read to stream sequence %d of %d in %v, and no replica delivered more", ErrConsumer, ErrBehind, at, o.r.until, o.b.opts.timeout))
		o.mu.Unlock()
		return nil
	}
	o.retakes++
	o.b.log.Debug("hookbus: ordered read behind the stream's leader; reading again from where it was", "at", at, "until", o.r.until, "retake", o.retakes)
	o.stop()
	from := o.r.from
	if at > 0 {
		from = at + 1
	}
	if err := o.start(ctx, from); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		o.b.log.Debug("hookbus: ordered read not taken up again", "error", err)
		return o.start(ctx, from)
	}
	return nil
}

// orderedConsumer creates an ordered consumer reading r from stream
// sequence from (0: as r says).
func (b *Bus) orderedConsumer(ctx context.Context, r orderedRead, from uint64) (jetstream.Consumer, error) {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: r.filters, DeliverPolicy: r.policy}
	if from > 0 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = from
	} else if !r.since.IsZero() {
		cfg.DeliverPolicy = jetstream.DeliverByStartTimePolicy
		since := r.since
		cfg.OptStartTime = &since
	}
	// The bus' timeout bounds each request, whatever ctx's deadline: the
	// server may place the consumer on a replica that never answers (one
	// catching up with the leader), and readOrdered asks again.
	rctx, cancel := context.WithTimeout(ctx, b.opts.timeout)
	cons, err := b.js.OrderedConsumer(rctx, b.names.Events, cfg)
	err = deadline.Err(rctx, err)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("%w: ordered consumer: %w", ErrConsumer, err)
	}
	return cons, nil
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
