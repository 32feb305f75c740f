package runs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/hookbus/hookbus/bus/internal/header"
	"github.com/hookbus/hookbus/bus/internal/wakeup"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go/jetstream"
)

// Wake-ups: a waiting run's wake-up at the expiry of its approvals is a
// JetStream message schedule in the wakes stream (bus.Names.Wakes), the only
// stream that allows schedules, and which only the loop identity may write
// (deploy/nats). A schedule's target must be a subject of its own stream,
// so a wake-up can only ever become a message of the wakes stream, never a
// run request. See docs/PROTOCOL.md, "Approvals", and docs/SECURITY.md.

// DueTTL (30 days) is how long a due wake-up stays in the wakes stream for
// the workers to take (Nats-Schedule-TTL of its schedule).
const DueTTL = wakeup.DueTTL

// WakeAt schedules w on <prefix>.wake.<agent>.<run> to be delivered on
// <prefix>.wake.<agent>.<run>.due at w.At (to the second, never before).
// A later WakeAt of the same run replaces the earlier. While JetStream is
// unavailable (bus.Unavailable: an election, the wakes stream's leader
// away), the wake-up is sent again with back-off, logged, until it is
// stored, ctx ends or the bus' outage bound passes (bus.Bus.Outage). It
// returns an error wrapping events' errors for bad ids, or ErrPublish.
func (q *Queue) WakeAt(ctx context.Context, w events.Wake) error {
	msg, at, err := wakeup.Msg(q.subj, w)
	if err != nil {
		return err
	}
	var giveUp time.Time
	for try := 1; ; try++ {
		rctx, cancel := context.WithTimeout(ctx, q.timeout)
		_, err := q.js.PublishMsg(rctx, msg)
		err = deadline.Err(rctx, err)
		cancel()
		if err == nil {
			if try > 1 {
				q.log.Info("hookbus: wake-up stored after JetStream was unavailable", "run", w.RunID, "at", at, "tries", try)
			}
			return nil
		}
		now := time.Now()
		if giveUp.IsZero() {
			giveUp = now.Add(q.b.Outage())
		}
		if !bus.Unavailable(err) || ctx.Err() != nil || !now.Before(giveUp) {
			return fmt.Errorf("%w: wake-up of run %s at %s (%d tries): %w", ErrPublish, w.RunID, at.Format(time.RFC3339), try, err)
		}
		delay := min(unavailableBackoff(try), giveUp.Sub(now))
		q.log.Warn("hookbus: wake-up not stored, JetStream unavailable: sending it again", "run", w.RunID, "at", at,
			"retry_in", delay, "waits_up_to", giveUp.Sub(now).Round(time.Second), "error", err)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: wake-up of run %s at %s (%d tries): %w", ErrPublish, w.RunID, at.Format(time.RFC3339), try, errors.Join(err, ctx.Err()))
		case <-t.C:
		}
	}
}

// WakeHandler handles a due wake-up. A nil error acknowledges it; an error
// has it delivered again after a back-off (up to 30 s), until it is
// handled.
type WakeHandler func(ctx context.Context, w events.Wake) error

// WakeConsumerConfig configures a worker's consumer of due wake-ups.
type WakeConsumerConfig struct {
	// Agent is the agent whose wake-ups to take ("": every agent's). Each
	// agent has its own durable, shared by the workers that serve it:
	// AgentDurable("hookbus-wakes", agent) ("hookbus-wakes" for every
	// agent). Two
	// workers that take the same wake-up (one serving every agent, one
	// serving the agent) both act on it; the record takes the first
	// answer, so that is harmless.
	Agent string
	// AckWait is how long a wake-up may stay unacknowledged before it is
	// delivered again (default 1 minute).
	AckWait time.Duration
}

// WakeConsumer is a running consumer of due wake-ups.
type WakeConsumer struct {
	q        *Queue
	durable  string
	handler  WakeHandler
	ctx      context.Context
	cancel   context.CancelFunc
	cc       jetstream.ConsumeContext
	mu       sync.Mutex
	closed   chan struct{}
	handled  atomic.Uint64
	failed   atomic.Uint64
	rejected atomic.Uint64
}

// ConsumeWakes starts a durable consumer of the due wake-ups of cfg.Agent
// (every agent's when empty) that calls handler for each, one at a time.
// A message that is not a wake-up, or one whose body names another agent
// or run than its subject, is terminated and logged. Cancelling ctx stops
// it. It returns an error wrapping ErrInvalidOption or events.ErrInvalidID
// for a bad config, or ErrConsumer.
func (q *Queue) ConsumeWakes(ctx context.Context, cfg WakeConsumerConfig, handler WakeHandler) (*WakeConsumer, error) {
	if handler == nil {
		return nil, invalid("nil wake handler")
	}
	cfg.AckWait = cmp.Or(cfg.AckWait, time.Minute)
	if cfg.AckWait < time.Second {
		return nil, invalid("wake ack wait %v (want >= 1s)", cfg.AckWait)
	}
	filter, err := q.subj.WakeDueFilter(cfg.Agent)
	if err != nil {
		return nil, err
	}
	durable := "hookbus-wakes"
	if cfg.Agent != "" {
		durable = AgentDurable(durable, cfg.Agent)
	}
	cc := jetstream.ConsumerConfig{
		Durable:       durable,
		Description:   "hookbus loop workers: due wake-ups of waiting runs",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		MaxDeliver:    -1,
		FilterSubject: filter,
	}
	rctx, cancel := q.withTimeout(ctx)
	cons, err := q.js.CreateOrUpdateConsumer(rctx, q.names.Wakes, cc)
	err = deadline.Err(rctx, err)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("%w: wake consumer %s: %w", ErrConsumer, durable, err)
	}
	wc := &WakeConsumer{q: q, durable: durable, handler: handler, closed: make(chan struct{})}
	wc.ctx, wc.cancel = context.WithCancel(context.WithoutCancel(ctx))
	wc.cc, err = cons.Consume(wc.handle, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		q.log.Warn("hookbus: wake consumer error", "durable", durable, "error", err)
	}))
	if err != nil {
		wc.cancel()
		return nil, fmt.Errorf("%w: wake consumer %s: %w", ErrConsumer, durable, err)
	}
	go func() {
		select {
		case <-ctx.Done():
			wc.Stop()
		case <-wc.cc.Closed():
		}
		<-wc.cc.Closed()
		wc.mu.Lock() // wait for a running handler
		wc.cancel()
		close(wc.closed)
		wc.mu.Unlock()
	}()
	return wc, nil
}

// Stop ends the consumer: no more wake-ups are handled, and the running
// handler's ctx is cancelled.
func (wc *WakeConsumer) Stop() {
	wc.cancel()
	wc.cc.Stop()
}

// Closed is closed once the consumer has stopped and its last handler call
// returned.
func (wc *WakeConsumer) Closed() <-chan struct{} { return wc.closed }

// Handled, Failed and Rejected count the wake-ups handled, the handler's
// failures (delivered again) and the messages that are not wake-ups.
func (wc *WakeConsumer) Handled() uint64  { return wc.handled.Load() }
func (wc *WakeConsumer) Failed() uint64   { return wc.failed.Load() }
func (wc *WakeConsumer) Rejected() uint64 { return wc.rejected.Load() }

func (wc *WakeConsumer) handle(m jetstream.Msg) {
	wc.mu.Lock()
	defer wc.mu.Unlock()
	if wc.ctx.Err() != nil {
		return // stopped: delivered again after AckWait
	}
	log := wc.q.log
	w, err := wc.decode(m)
	if err != nil {
		wc.rejected.Add(1)
		log.Warn("hookbus: malformed wake-up dropped", "durable", wc.durable, "subject", m.Subject(), "reason", err)
		_ = m.TermWithReason(header.OneLine(err.Error(), 200))
		return
	}
	herr := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("wake handler panic: %v", r)
			}
		}()
		return wc.handler(wc.ctx, w)
	}()
	if herr == nil {
		actx, cancel := context.WithTimeout(context.WithoutCancel(wc.ctx), wc.q.timeout)
		err := m.DoubleAck(actx)
		cancel()
		if err != nil {
			log.Warn("hookbus: wake-up ack failed; it will be delivered again", "run", w.RunID, "error", err)
			return
		}
		wc.handled.Add(1)
		return
	}
	wc.failed.Add(1)
	delay := time.Second
	if meta, err := m.Metadata(); err == nil {
		delay = min(time.Duration(meta.NumDelivered)*time.Second, 30*time.Second)
	}
	log.Warn("hookbus: wake-up not handled; delivered again", "run", w.RunID, "retry_in", delay, "error", herr)
	_ = m.NakWithDelay(delay)
}

// decode reads a due wake-up, checking it against its subject.
func (wc *WakeConsumer) decode(m jetstream.Msg) (events.Wake, error) {
	var w events.Wake
	if err := json.Unmarshal(m.Data(), &w); err != nil {
		return w, fmt.Errorf("%w: wake-up: %v", events.ErrPayload, err)
	}
	if err := w.Validate(); err != nil {
		return w, err
	}
	if want, err := wc.q.subj.WakeDue(w.AgentID, w.RunID); err != nil || want != m.Subject() {
		return w, fmt.Errorf("%w: wake-up of run %s of agent %s delivered on %s", events.ErrPayload, w.RunID, w.AgentID, m.Subject())
	}
	return w, nil
}
