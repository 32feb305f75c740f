package bus

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/hookbus/hookbus/bus/internal/header"
	"github.com/hookbus/hookbus/bus/internal/jsname"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of ObserveConfig.
const (
	DefaultMaxAckPending = 256
	DefaultMaxDeliver    = 5
	DefaultAckWait       = 30 * time.Second
)

// DefaultBackoff returns the delays before a failed event is delivered
// again: 1s, 5s, then 30s (see ObserveConfig.Backoff).
func DefaultBackoff() []time.Duration {
	return []time.Duration{time.Second, 5 * time.Second, 30 * time.Second}
}

// Headers added to a dead letter, besides the original message's headers.
const (
	HeaderDLQConsumer   = "Hookbus-Dlq-Consumer"   // the observer's durable name
	HeaderDLQError      = "Hookbus-Dlq-Error"      // the handler's last error
	HeaderDLQDeliveries = "Hookbus-Dlq-Deliveries" // how many times it was delivered
	HeaderDLQStream     = "Hookbus-Dlq-Stream"     // the stream of the original
	HeaderDLQSequence   = "Hookbus-Dlq-Sequence"   // its stream sequence
	HeaderDLQSubject    = "Hookbus-Dlq-Subject"    // its subject
)

// EventHandler handles one event. A nil error acknowledges it; an error
// has it delivered again after a back-off, and dead-lettered once the
// deliveries are used up. A panic counts as an error. e.Data shares the
// received message's buffer (which a dead letter copies): replace it rather
// than modify it in place.
type EventHandler func(ctx context.Context, e *events.Event) error

// ObserveConfig configures a durable observer of the events stream.
type ObserveConfig struct {
	// Durable names the consumer (required; a valid id, no '/' or '\').
	// Observers with the same name share the work and the acked position: a
	// restarted observer continues where the last one stopped.
	Durable string
	// Agent and Session narrow the events (empty matches any).
	Agent, Session string
	// Stages narrows the events to these stages (empty means every stage).
	Stages []events.Stage
	// MaxAckPending bounds the events delivered and not yet acknowledged
	// (default 256).
	MaxAckPending int
	// MaxDeliver is how many times an event is delivered before it is dead-
	// lettered (default 5; -1 retries forever).
	MaxDeliver int
	// Backoff is the delay before redelivering a failed event: Backoff[n-1]
	// after the n-th failed delivery, the last value repeating (default
	// DefaultBackoff(); an empty non-nil slice redelivers at once).
	Backoff []time.Duration
	// AckWait is how long a delivered event may stay unacknowledged before
	// it is delivered again (default 30s). A handler that runs longer keeps
	// its event: the observer reports progress every AckWait/3; a crashed
	// observer's events come back after AckWait (a stopped one hands them
	// back at once, see Observer.Stop).
	AckWait time.Duration
	// NoDeadLetter drops (terminates) an event whose deliveries are used up
	// instead of writing it to <prefix>.dlq.<durable>.
	NoDeadLetter bool
	// DeliverPolicy says where a new durable starts (default all events;
	// DeliverByStartTimePolicy when StartTime is set). An existing durable
	// keeps its position.
	DeliverPolicy jetstream.DeliverPolicy
	// StartTime is where a new durable starts, with DeliverByStartTimePolicy.
	StartTime time.Time
}

// handling is an event whose handler is running.
type handling struct {
	m     jetstream.Msg
	since time.Time
}

// ObserverStats counts what an observer did since it started.
type ObserverStats struct {
	Delivered    uint64 // messages received, redeliveries included
	Acked        uint64 // events handled and acknowledged
	Naked        uint64 // failed deliveries to be retried
	DeadLettered uint64 // events written to the dead-letter subject
	Malformed    uint64 // messages that are not hookbus events (terminated)
	// Unfetched counts events handed to the handler without their data:
	// claim-checked data gone for good from the object store (expired,
	// deleted). e.DecodeData names the reference.
	Unfetched uint64
	// Returned counts events handed back unhandled when the observer
	// stopped (its handler's event included when it failed meanwhile):
	// the durable's next observer gets them at once.
	Returned uint64
}

// Observer is a running durable consumer of events. Stop, Drain or the
// cancellation of Observe's ctx ends it; Closed tells when it has ended.
type Observer struct {
	b       *Bus
	cfg     ObserveConfig
	handler EventHandler
	dlq     string
	ctx     context.Context // cancelled by Stop, given to the handler
	cancel  context.CancelFunc
	cc      jetstream.ConsumeContext
	mu      sync.Mutex // held while an event is handled
	closed  chan struct{}
	back    handBacks                // what Stop hands back (handback.go)
	current atomic.Pointer[handling] // the event being handled, for keepAlive

	delivered, acked, naked, deadLettered, malformed, unfetched, returned atomic.Uint64
}

// validDurable checks a durable name; the error wraps ErrInvalidOption.
func validDurable(kind, name string) error {
	if err := jsname.ValidDurable(kind, name); err != nil {
		return invalid("%v", err)
	}
	return nil
}

// filterSubjects returns the event subject filters of agent, session and
// stages (each validated).
func (b *Bus) filterSubjects(agent, session string, stages []events.Stage) ([]string, error) {
	if len(stages) == 0 {
		f, err := b.subj.EventFilter(agent, session, "")
		if err != nil {
			return nil, err
		}
		return []string{f}, nil
	}
	out := make([]string, 0, len(stages))
	seen := make(map[events.Stage]bool, len(stages))
	for _, st := range stages {
		if st == "" || seen[st] {
			continue
		}
		seen[st] = true
		f, err := b.subj.EventFilters(agent, session, st)
		if err != nil {
			return nil, err
		}
		out = append(out, f...)
	}
	return out, nil
}

// Observe starts a durable pull consumer on the events stream that calls
// handler for each event, one at a time, in stream order (redeliveries
// aside). The consumer is created, or updated when it exists with another
// filter or limits. handler's nil error acknowledges the event (the ack is
// confirmed by the server before the next event is handled); an error or a
// panic naks it with the back-off of its delivery count; after MaxDeliver
// failed deliveries the original message is written to
// <prefix>.dlq.<durable>, with the Hookbus-Dlq-* headers, and terminated.
// A message that is not a hookbus event is logged, counted as malformed and
// terminated. A claim-checked event reaches handler with its data fetched
// from the payloads object store (DataRef still set); a fetch that fails
// for a reason that may pass counts as a failed delivery, and data gone for
// good is counted (Unfetched) and logged, the handler getting the event
// without it. Cancelling ctx stops the observer.
//
// It returns an error wrapping ErrInvalidOption for a bad config,
// events.ErrInvalidID or events.ErrUnknownStage for a bad filter, or
// ErrConsumer when JetStream refuses the consumer.
func (b *Bus) Observe(ctx context.Context, cfg ObserveConfig, handler EventHandler) (*Observer, error) {
	if handler == nil {
		return nil, invalid("nil handler")
	}
	if err := validDurable("durable", cfg.Durable); err != nil {
		return nil, err
	}
	if cfg.MaxAckPending == 0 {
		cfg.MaxAckPending = DefaultMaxAckPending
	}
	if cfg.MaxDeliver == 0 {
		cfg.MaxDeliver = DefaultMaxDeliver
	}
	if cfg.AckWait == 0 {
		cfg.AckWait = DefaultAckWait
	}
	if cfg.Backoff == nil {
		cfg.Backoff = DefaultBackoff()
	}
	switch {
	case cfg.MaxAckPending < 0:
		return nil, invalid("max ack pending %d is negative", cfg.MaxAckPending)
	case cfg.MaxDeliver < -1:
		return nil, invalid("max deliver %d (want -1 or > 0)", cfg.MaxDeliver)
	case cfg.AckWait < time.Second/10:
		return nil, invalid("ack wait %v (want >= 100ms)", cfg.AckWait)
	}
	for _, d := range cfg.Backoff {
		if d < 0 {
			return nil, invalid("negative back-off %v", d)
		}
	}
	filters, err := b.filterSubjects(cfg.Agent, cfg.Session, cfg.Stages)
	if err != nil {
		return nil, err
	}
	dlq, err := b.subj.DeadLetter(cfg.Durable)
	if err != nil {
		return nil, invalid("%v", err)
	}
	cc := jetstream.ConsumerConfig{
		Durable:       cfg.Durable,
		Description:   "hookbus observer",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		MaxAckPending: cfg.MaxAckPending,
		MaxDeliver:    cfg.MaxDeliver,
		DeliverPolicy: cfg.DeliverPolicy,
	}
	if !cfg.StartTime.IsZero() {
		if cc.DeliverPolicy == jetstream.DeliverAllPolicy {
			cc.DeliverPolicy = jetstream.DeliverByStartTimePolicy
		}
		start := cfg.StartTime
		cc.OptStartTime = &start
	}
	setFilters(&cc, filters)

	rctx, cancel := b.withTimeout(ctx)
	cons, err := b.js.CreateOrUpdateConsumer(rctx, b.names.Events, cc)
	err = deadline.Err(rctx, err)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("%w: observer %s: %w", ErrConsumer, cfg.Durable, err)
	}
	o := &Observer{b: b, cfg: cfg, handler: handler, dlq: dlq, closed: make(chan struct{})}
	o.ctx, o.cancel = context.WithCancel(context.WithoutCancel(ctx))
	o.cc, err = cons.Consume(o.handle, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		b.log.Warn("hookbus: observer consume error", "durable", cfg.Durable, "error", err)
	}))
	if err != nil {
		o.cancel()
		return nil, fmt.Errorf("%w: observer %s: %w", ErrConsumer, cfg.Durable, err)
	}
	go o.watch(ctx)
	go o.keepAlive()
	b.log.Debug("hookbus: observer started", "durable", cfg.Durable, "filters", filters)
	return o, nil
}

func setFilters(cc *jetstream.ConsumerConfig, filters []string) {
	if len(filters) == 1 {
		cc.FilterSubject = filters[0]
	} else {
		cc.FilterSubjects = filters
	}
}

// watch stops the observer with ctx and closes o.closed once consumption
// has ended and no handler runs.
func (o *Observer) watch(ctx context.Context) {
	select {
	case <-ctx.Done():
		o.Stop()
	case <-o.cc.Closed():
	}
	<-o.cc.Closed()
	o.mu.Lock() // wait for a running handler
	o.cancel()
	if ms := o.back.take(time.Now()); len(ms) > 0 {
		for _, m := range ms {
			o.handBack(m)
		}
		// The hand-backs are with the server before Closed says so.
		_ = o.b.nc.FlushTimeout(o.b.opts.timeout)
	}
	close(o.closed)
	o.mu.Unlock()
}

// keepAlive tells the server that a handler running longer than a third of
// AckWait is still at work, so its event is not delivered again meanwhile.
func (o *Observer) keepAlive() {
	every := o.cfg.AckWait / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-o.closed:
			return
		case <-t.C:
			if h := o.current.Load(); h != nil && time.Since(h.since) >= every {
				if err := h.m.InProgress(); err != nil {
					o.b.log.Debug("hookbus: progress not reported", "durable", o.cfg.Durable, "error", err)
				}
			}
		}
	}
}

// Stop ends the observer at once: no more events are handled and the
// running handler's ctx is cancelled. The events it received and did not
// handle (the running handler's too, should it fail), and those it failed
// that have not come back to it, are handed back to the server in stream
// order (a NAK), so the durable's next observer gets them at once and in
// order rather than after AckWait; Stats().Returned counts them. Only an event in flight when the subscription ends, or one whose
// NAK is lost with the connection, waits for AckWait.
func (o *Observer) Stop() {
	o.cancel()
	// Drained rather than stopped, so that the messages already buffered
	// reach handle, which hands them back.
	o.cc.Drain()
}

// Drain ends the observer after the events already received are handled.
func (o *Observer) Drain() { o.cc.Drain() }

// Closed is closed once the observer has ended and its last handler call
// has returned.
func (o *Observer) Closed() <-chan struct{} { return o.closed }

// Durable returns the consumer's name.
func (o *Observer) Durable() string { return o.cfg.Durable }

// Stats returns the observer's counters.
func (o *Observer) Stats() ObserverStats {
	return ObserverStats{
		Delivered: o.delivered.Load(), Acked: o.acked.Load(), Naked: o.naked.Load(),
		DeadLettered: o.deadLettered.Load(), Malformed: o.malformed.Load(), Unfetched: o.unfetched.Load(),
		Returned: o.returned.Load(),
	}
}

func (o *Observer) handle(m jetstream.Msg) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ctx.Err() != nil {
		o.giveBack(m)
		return
	}
	o.delivered.Add(1)
	log := o.b.log
	meta, err := m.Metadata()
	if err != nil {
		log.Warn("hookbus: observer got a message without JetStream metadata", "durable", o.cfg.Durable, "subject", m.Subject(), "error", err)
		return
	}
	o.back.delivered(meta.Sequence.Stream)
	e, err := o.b.decodeStored(m.Subject(), m.Headers(), m.Data())
	if err != nil {
		o.malformed.Add(1)
		log.Warn("hookbus: malformed event skipped", "durable", o.cfg.Durable, "subject", m.Subject(),
			"stream_seq", meta.Sequence.Stream, "reason", err)
		if err := m.TermWithReason("malformed: " + header.OneLine(err.Error(), 200)); err != nil {
			log.Warn("hookbus: term failed", "durable", o.cfg.Durable, "error", err)
		}
		return
	}
	e.Stored = meta.Sequence.Stream
	herr := o.fetch(e) // claim-checked data (payloads.go)
	if herr == nil {
		herr = o.call(m, e)
	}
	if herr == nil {
		// Handled: ack even if Stop came meanwhile.
		actx, cancel := context.WithTimeout(context.WithoutCancel(o.ctx), o.b.opts.timeout)
		err := m.DoubleAck(actx)
		cancel()
		if err != nil {
			log.Warn("hookbus: ack failed; the event will be delivered again", "durable", o.cfg.Durable, "id", e.ID, "error", err)
			return
		}
		o.acked.Add(1)
		return
	}
	if o.ctx.Err() != nil {
		// Stopped while it ran: the failure may be the stop's own, so
		// the event goes back at once, not after a back-off nor to the
		// dead letters.
		o.b.log.Debug("hookbus: handler failed while the observer stopped; event handed back", "durable", o.cfg.Durable, "id", e.ID, "error", herr)
		o.giveBack(m)
		return
	}
	if o.cfg.MaxDeliver > 0 && meta.NumDelivered >= uint64(o.cfg.MaxDeliver) {
		o.giveUp(m, meta, e, herr)
		return
	}
	o.naked.Add(1)
	delay := time.Duration(0)
	if n := len(o.cfg.Backoff); n > 0 {
		delay = o.cfg.Backoff[min(int(meta.NumDelivered), n)-1]
	}
	log.Debug("hookbus: handler failed; event naked", "durable", o.cfg.Durable, "id", e.ID,
		"delivery", meta.NumDelivered, "retry_in", delay, "error", herr)
	if err := m.NakWithDelay(delay); err != nil {
		log.Warn("hookbus: nak failed", "durable", o.cfg.Durable, "id", e.ID, "error", err)
		return
	}
	if delay > 0 {
		o.back.delay(meta.Sequence.Stream, m, time.Now().Add(delay), o.cfg.MaxAckPending)
	}
}

// giveBack hands an event the stopping observer will not handle back to
// the server, for the durable's next observer: kept until the subscription
// has ended, since a NAK while it lasts would have the event delivered to
// it again; at once after. o.mu is held.
func (o *Observer) giveBack(m jetstream.Msg) {
	meta, err := m.Metadata()
	switch {
	case err != nil:
		return // not a JetStream message: nothing to hand back
	case o.back.ended:
		o.handBack(m)
	default:
		o.back.keep(meta.Sequence.Stream, m)
	}
}

// handBack NAKs m for the durable's next observer (handback.go). The NAK
// is published here rather than by m.NakWithDelay, which refuses a message
// already NAKed (a failed event waiting out its back-off).
func (o *Observer) handBack(m jetstream.Msg) {
	nak := fmt.Appendf(nil, `-NAK {"delay": %d}`, handBackDelay.Nanoseconds())
	if err := o.b.nc.Publish(m.Reply(), nak); err != nil {
		o.b.log.Warn("hookbus: a stopping observer could not hand an event back; it is delivered again after AckWait",
			"durable", o.cfg.Durable, "subject", m.Subject(), "error", err)
		return
	}
	o.returned.Add(1)
}

// call runs the handler, turning a panic into an error.
func (o *Observer) call(m jetstream.Msg, e *events.Event) (err error) {
	o.current.Store(&handling{m: m, since: time.Now()})
	defer o.current.Store(nil)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panic: %v", r)
		}
	}()
	return o.handler(o.ctx, e)
}

// giveUp dead-letters (unless disabled) and terminates an event whose
// deliveries are used up.
func (o *Observer) giveUp(m jetstream.Msg, meta *jetstream.MsgMetadata, e *events.Event, herr error) {
	log := o.b.log
	if !o.cfg.NoDeadLetter {
		if err := o.deadLetter(m, herr); err != nil {
			// Not terminated: the event stays in the events stream and the
			// error is loud. Nothing acknowledged is lost.
			log.Error("hookbus: dead letter failed", "durable", o.cfg.Durable, "id", e.ID, "error", err, "handler_error", herr)
			return
		}
		o.deadLettered.Add(1)
		log.Warn("hookbus: event dead-lettered", "durable", o.cfg.Durable, "id", e.ID, "subject", o.dlq,
			"deliveries", meta.NumDelivered, "error", herr)
	} else {
		log.Warn("hookbus: event dropped after its last delivery", "durable", o.cfg.Durable, "id", e.ID,
			"deliveries", meta.NumDelivered, "error", herr)
	}
	if err := m.TermWithReason("max deliveries: " + header.OneLine(herr.Error(), 200)); err != nil {
		log.Warn("hookbus: term failed", "durable", o.cfg.Durable, "id", e.ID, "error", err)
	}
}

func (o *Observer) deadLetter(m jetstream.Msg, herr error) error {
	ctx, cancel := context.WithTimeout(o.ctx, o.b.opts.timeout)
	defer cancel()
	return o.b.DeadLetter(ctx, o.cfg.Durable, m, herr)
}

// DeadLetter publishes a copy of m (headers and body), a message of a
// JetStream consumer named durable, to <prefix>.dlq.<durable>, with the
// Hookbus-Dlq-* headers saying why, once per consumer and stream message
// (its Nats-Msg-Id), even when retried. Observe dead-letters so an event
// whose deliveries are used up, and the run queue's workers a request they
// refuse. It returns an error wrapping ErrInvalidOption for a durable that
// cannot name a subject, or ErrPublish.
func (b *Bus) DeadLetter(ctx context.Context, durable string, m jetstream.Msg, why error) error {
	dlq, err := b.subj.DeadLetter(durable)
	if err != nil {
		return invalid("%v", err)
	}
	meta, err := m.Metadata()
	if err != nil {
		return fmt.Errorf("%w: dead letter on %s: %w", ErrPublish, dlq, err)
	}
	h := make(nats.Header, len(m.Headers())+8)
	for k, v := range m.Headers() {
		h[k] = append([]string(nil), v...)
	}
	h.Set(HeaderDLQConsumer, durable)
	h.Set(HeaderDLQError, header.OneLine(why.Error(), 1024))
	h.Set(HeaderDLQDeliveries, strconv.FormatUint(meta.NumDelivered, 10))
	h.Set(HeaderDLQStream, meta.Stream)
	h.Set(HeaderDLQSequence, strconv.FormatUint(meta.Sequence.Stream, 10))
	h.Set(HeaderDLQSubject, m.Subject())
	// One dead letter per consumer and stream message, even if retried.
	h.Set(jetstream.MsgIDHeader, "dlq."+durable+"."+meta.Stream+"."+strconv.FormatUint(meta.Sequence.Stream, 10))
	if _, err := b.js.PublishMsg(ctx, &nats.Msg{Subject: dlq, Header: h, Data: m.Data()}); err != nil {
		return fmt.Errorf("%w: dead letter on %s: %w", ErrPublish, dlq, deadline.Err(ctx, err))
	}
	return nil
}
