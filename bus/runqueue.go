package bus

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of RunConsumerConfig.
const (
	DefaultRunDurable  = "hookbus-workers"
	DefaultRunAckWait  = 10 * time.Minute
	DefaultRunPollWait = time.Second
)

// SubmitRun queues a run request on <prefix>.run.<agent> (the runs work
// queue) and returns once JetStream stored it. Its Nats-Msg-Id is the run
// id, so submitting the same run again within the duplicate window queues
// it once (and returns nil). A zero SubmittedAt is set to now in the queued
// copy. It returns an error wrapping events.ErrInvalidID or
// events.ErrPayload for an invalid request, ErrPublish, or ctx's error.
func (b *Bus) SubmitRun(ctx context.Context, req *events.RunRequest) error {
	return b.submit(ctx, req, "")
}

// Resume queues req, a run to go on with (RunRequest.Resume), on
// <prefix>.run.<agent> under the de-duplication id id (the run's own id is
// its first request's). Errors are SubmitRun's.
func (b *Bus) Resume(ctx context.Context, req *events.RunRequest, id string) error {
	if id == "" {
		return fmt.Errorf("%w: resume run without an id", events.ErrPayload)
	}
	return b.submit(ctx, req, id)
}

func (b *Bus) submit(ctx context.Context, req *events.RunRequest, msgID string) error {
	if req == nil {
		return fmt.Errorf("%w: nil run request", events.ErrPayload)
	}
	if err := req.Validate(); err != nil {
		return err
	}
	r := *req
	if r.SubmittedAt.IsZero() {
		r.SubmittedAt = time.Now().UTC()
	}
	body, err := json.Marshal(&r)
	if err != nil {
		return fmt.Errorf("%w: run %s: %v", events.ErrPayload, r.RunID, err)
	}
	subject, err := b.subj.Run(r.AgentID)
	if err != nil {
		return err
	}
	id := r.RunID
	if msgID != "" {
		id = msgID
	}
	msg := &nats.Msg{Subject: subject, Header: nats.Header{jetstream.MsgIDHeader: []string{id}}, Data: body}
	if limit := b.pay.limit(); limit > 0 && msgSize(msg.Header, len(body)) > limit {
		// Too large for one message (a long prompt): the request travels
		// as a stub naming an object that holds it.
		sum := sha256.Sum256(body)
		name := runObjectPrefix + r.RunID + "/" + hex.EncodeToString(sum[:])
		meta := jetstream.ObjectMeta{Name: name, Description: "hookbus run request " + r.RunID,
			Metadata: map[string]string{"hookbus.run": r.RunID, "hookbus.agent": r.AgentID, "hookbus.session": r.SessionID}}
		if err := b.pay.putData(ctx, name, body, meta); err != nil {
			return fmt.Errorf("%w: run %s: %w", ErrPublish, r.RunID, err)
		}
		msg.Header.Set(RunRefHeader, b.pay.bucket+"/"+name)
		msg.Data = nil
	}
	ctx, cancel := b.withTimeout(ctx)
	defer cancel()
	ack, err := b.js.PublishMsg(ctx, msg)
	if err != nil {
		return fmt.Errorf("%w: run %s: %w", ErrPublish, r.RunID, ctxErr(ctx, err))
	}
	if ack.Duplicate {
		b.log.Debug("hookbus: run already queued", "run", r.RunID)
	}
	return nil
}

// RunHandler runs one requested run. A nil error acknowledges the request
// (it leaves the queue); an error hands it back to the queue for another
// attempt, on any worker, after a back-off. A panic counts as an error.
//
// An error for which errors.As finds an Abandoner whose Abandoned reports
// true leaves the request alone: neither acknowledged nor handed back. A
// handler returns one when another worker holds the run now (its attempt
// lost the session's claim): the request was delivered to that worker, and
// acknowledging it here would end the other worker's delivery (JetStream
// takes an ack of an earlier delivery for the message's).
type RunHandler func(ctx context.Context, req *events.RunRequest) error

// Abandoner is implemented by a RunHandler error that leaves its request to
// the worker it was delivered to since (see RunHandler). loop.ErrLostRun's
// errors are Abandoners.
type Abandoner interface {
	Abandoned() bool
}

// Refusal is implemented by a RunHandler error that refuses its request for
// good: the request is dead-lettered with the error and terminated, not
// handed back.
type Refusal interface {
	Refused() bool
}

// RunConsumerConfig configures a loop worker's consumption of run requests.
// Every worker of one pool uses the same Durable and the same config.
type RunConsumerConfig struct {
	// Durable names the shared consumer (default "hookbus-workers").
	Durable string
	// Agents limits the pool to these agents' runs (empty: every agent). A
	// work queue lets one consumer own a subject: pools must not overlap.
	Agents []string
	// Concurrency is how many runs this worker handles at once (default 1).
	Concurrency int
	// AckWait is how long a run may go without a sign of life before it is
	// given to another worker (default 10m). While the handler runs, the
	// worker reports progress every AckWait/3, so a long run keeps its lease.
	AckWait time.Duration
	// MaxDeliver bounds the attempts of one request (default 5; -1 forever);
	// after the last failed attempt the request is dropped, loudly.
	MaxDeliver int
	// MaxAckPending bounds the runs in flight across the pool (default: the
	// server's, 1000).
	MaxAckPending int
	// PollWait is how long one pull for work waits; Stop and Drain take up
	// to this long (default 1s).
	PollWait time.Duration
}

// RunConsumerStats counts what a run consumer did since it started.
type RunConsumerStats struct {
	Received  uint64 // requests received, redeliveries included
	Completed uint64 // handled and acknowledged
	Failed    uint64 // handler errors, handed back to the queue
	Abandoned uint64 // left to the worker that holds the run now
	Dropped   uint64 // terminated after the last attempt
	Malformed uint64 // bodies that are not valid run requests (terminated)
	// Refused counts requests whose body names another agent than the
	// subject they were published on: dead-lettered and terminated, never
	// run (subject permissions on <prefix>.run.<agent> must mean something).
	Refused uint64
}

// RunConsumer is a running worker on the run queue.
type RunConsumer struct {
	b          *Bus
	cfg        RunConsumerConfig
	handler    RunHandler
	runCtx     context.Context // cancelled by Stop: the handlers' ctx
	stopRuns   context.CancelFunc
	fetching   atomic.Bool
	wg         sync.WaitGroup
	closed     chan struct{}
	received   atomic.Uint64
	completed  atomic.Uint64
	failed     atomic.Uint64
	dropped    atomic.Uint64
	malformedN atomic.Uint64
	abandoned  atomic.Uint64
	refused    atomic.Uint64
	dlq        string
}

// ConsumeRuns starts a worker on the run queue: a durable pull consumer,
// shared by every worker of the pool, from which this worker takes at most
// Concurrency runs at a time (it pulls only when a slot is free, so it
// never holds requests another worker could run). While handler runs, the
// request's lease is renewed (InProgress); handler's nil error acks it
// (confirmed by the server); an error naks it so that it is delivered again,
// to any worker; a malformed request is terminated and logged. Cancelling
// ctx stops the worker.
//
// It returns an error wrapping ErrInvalidOption for a bad config,
// events.ErrInvalidID for a bad agent, or ErrConsumer when JetStream
// refuses the consumer (for example a pool overlapping another).
func (b *Bus) ConsumeRuns(ctx context.Context, cfg RunConsumerConfig, handler RunHandler) (*RunConsumer, error) {
	if handler == nil {
		return nil, invalid("nil run handler")
	}
	if cfg.Durable == "" {
		cfg.Durable = DefaultRunDurable
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 1
	}
	if cfg.AckWait == 0 {
		cfg.AckWait = DefaultRunAckWait
	}
	if cfg.MaxDeliver == 0 {
		cfg.MaxDeliver = DefaultMaxDeliver
	}
	if cfg.PollWait == 0 {
		cfg.PollWait = DefaultRunPollWait
	}
	if err := validDurable("durable", cfg.Durable); err != nil {
		return nil, err
	}
	switch {
	case cfg.Concurrency < 0:
		return nil, invalid("concurrency %d is negative", cfg.Concurrency)
	case cfg.AckWait < time.Second:
		return nil, invalid("run ack wait %v (want >= 1s)", cfg.AckWait)
	case cfg.MaxDeliver < -1:
		return nil, invalid("max deliver %d (want -1 or > 0)", cfg.MaxDeliver)
	case cfg.MaxAckPending < 0:
		return nil, invalid("max ack pending %d is negative", cfg.MaxAckPending)
	case cfg.PollWait < 100*time.Millisecond:
		return nil, invalid("poll wait %v (want >= 100ms)", cfg.PollWait)
	}
	runs := []string{b.subj.AllRuns()}
	if len(cfg.Agents) > 0 {
		runs = nil
		for _, a := range cfg.Agents {
			f, err := b.subj.Run(a)
			if err != nil {
				return nil, err
			}
			runs = append(runs, f)
		}
	}
	cons, err := b.runConsumer(ctx, cfg, cfg.Durable, "hookbus loop workers: run requests", runs, cfg.MaxAckPending)
	if err != nil {
		return nil, err
	}
	dlq, err := b.subj.DeadLetter(cfg.Durable)
	if err != nil {
		return nil, invalid("durable %q: %v", cfg.Durable, err)
	}
	rc := &RunConsumer{b: b, cfg: cfg, handler: handler, closed: make(chan struct{}), dlq: dlq}
	rc.runCtx, rc.stopRuns = context.WithCancel(context.WithoutCancel(ctx))
	rc.fetching.Store(true)
	for i := 0; i < cfg.Concurrency; i++ {
		rc.wg.Add(1)
		go rc.work(cons)
	}
	go func() {
		rc.wg.Wait()
		rc.stopRuns()
		close(rc.closed)
	}()
	go func() {
		select {
		case <-ctx.Done():
			rc.Stop()
		case <-rc.closed:
		}
	}()
	return rc, nil
}

// Stop ends the worker: no more requests are pulled, and running handlers'
// ctx is cancelled (a handler that then fails hands its run back to the
// queue). Closed tells when every handler has returned.
func (rc *RunConsumer) Stop() {
	rc.fetching.Store(false)
	rc.stopRuns()
}

// Drain ends the worker after its running handlers finish; no more
// requests are pulled.
func (rc *RunConsumer) Drain() { rc.fetching.Store(false) }

// Closed is closed once the worker has stopped pulling and every handler
// has returned.
func (rc *RunConsumer) Closed() <-chan struct{} { return rc.closed }

// Stats returns the worker's counters.
func (rc *RunConsumer) Stats() RunConsumerStats {
	return RunConsumerStats{
		Received: rc.received.Load(), Completed: rc.completed.Load(), Failed: rc.failed.Load(),
		Dropped: rc.dropped.Load(), Malformed: rc.malformedN.Load(), Abandoned: rc.abandoned.Load(),
		Refused: rc.refused.Load(),
	}
}

// runConsumer creates or updates one of the pool's durable consumers.
func (b *Bus) runConsumer(ctx context.Context, cfg RunConsumerConfig, durable, desc string, filters []string, maxAckPending int) (jetstream.Consumer, error) {
	cc := jetstream.ConsumerConfig{
		Durable:       durable,
		Description:   desc,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		MaxDeliver:    cfg.MaxDeliver,
		MaxAckPending: maxAckPending,
	}
	setFilters(&cc, filters)
	rctx, cancel := b.withTimeout(ctx)
	cons, err := b.js.CreateOrUpdateConsumer(rctx, b.names.Runs, cc)
	err = ctxErr(rctx, err)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("%w: run consumer %s: %w", ErrConsumer, durable, err)
	}
	return cons, nil
}

// work is one slot: pull one request from cons, run it, repeat.
func (rc *RunConsumer) work(cons jetstream.Consumer) {
	defer rc.wg.Done()
	log := rc.b.log
	for rc.fetching.Load() {
		if rc.b.nc.IsClosed() {
			return
		}
		// The pull is never cancelled midway: a request the server sent to
		// an abandoned pull would be stuck for AckWait.
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(rc.cfg.PollWait))
		if err != nil {
			log.Warn("hookbus: run pull failed", "durable", rc.cfg.Durable, "error", err)
			rc.pause()
			continue
		}
		for m := range batch.Messages() {
			rc.handle(m)
		}
		if err := batch.Error(); err != nil && err != nats.ErrTimeout {
			log.Warn("hookbus: run pull failed", "durable", rc.cfg.Durable, "error", err)
			rc.pause()
		}
	}
}

// pause waits a poll interval, or less when stopped.
func (rc *RunConsumer) pause() {
	select {
	case <-time.After(rc.cfg.PollWait):
	case <-rc.runCtx.Done():
	}
}

func (rc *RunConsumer) handle(m jetstream.Msg) {
	rc.received.Add(1)
	log := rc.b.log
	if !rc.fetching.Load() {
		_ = m.Nak() // stopping: give it straight to another worker
		return
	}
	req, err := rc.decode(m)
	if err != nil {
		rc.malformedN.Add(1)
		log.Warn("hookbus: malformed run request dropped", "durable", rc.cfg.Durable, "subject", m.Subject(), "reason", err)
		if err := m.TermWithReason("malformed: " + oneLine(err.Error(), 200)); err != nil {
			log.Warn("hookbus: term failed", "error", err)
		}
		return
	}
	if want, err := rc.b.subj.Run(req.AgentID); err != nil || want != m.Subject() {
		rc.refuse(m, req, fmt.Errorf("run request %s names agent %q but was published on %s: refused", req.RunID, req.AgentID, m.Subject()))
		return
	}
	herr := rc.run(m, req)
	var ab Abandoner
	if herr != nil && errors.As(herr, &ab) && ab.Abandoned() {
		rc.abandoned.Add(1)
		log.Warn("hookbus: run left to the worker that holds it now", "run", req.RunID, "agent", req.AgentID, "reason", herr)
		return
	}
	var rf Refusal
	if herr != nil && errors.As(herr, &rf) && rf.Refused() {
		rc.refuse(m, req, herr)
		return
	}
	if herr == nil {
		ctx, cancel := context.WithTimeout(context.Background(), rc.b.opts.timeout)
		err := m.DoubleAck(ctx)
		cancel()
		if err != nil {
			log.Warn("hookbus: run ack failed; it may run again", "run", req.RunID, "error", err)
			return
		}
		rc.completed.Add(1)
		return
	}
	meta, err := m.Metadata()
	if err == nil && rc.cfg.MaxDeliver > 0 && meta.NumDelivered >= uint64(rc.cfg.MaxDeliver) {
		rc.dropped.Add(1)
		log.Error("hookbus: run dropped after its last attempt", "run", req.RunID, "agent", req.AgentID,
			"attempts", meta.NumDelivered, "error", herr)
		_ = m.TermWithReason("max deliveries: " + oneLine(herr.Error(), 200))
		return
	}
	rc.failed.Add(1)
	delay := time.Second
	if err == nil {
		delay = min(time.Duration(meta.NumDelivered)*time.Second, 30*time.Second)
	}
	log.Warn("hookbus: run not ended; handed back to the queue", "run", req.RunID, "agent", req.AgentID, "retry_in", delay, "error", herr)
	if err := m.NakWithDelay(delay); err != nil {
		log.Warn("hookbus: nak failed", "run", req.RunID, "error", err)
	}
}

// RunRefHeader names, on a run request too large for one message, the
// payloads object that holds it ("<bucket>/run/<run id>/<hex SHA-256>");
// the message's body is then empty.
const RunRefHeader = "Hookbus-Run-Ref"

// runObjectPrefix starts the names of claim-checked run requests.
const runObjectPrefix = "run/"

// decode reads a run request (fetching a claim-checked one).
func (rc *RunConsumer) decode(m jetstream.Msg) (*events.RunRequest, error) {
	ref := m.Headers().Get(RunRefHeader)
	if ref == "" {
		return events.DecodeRunRequest(m.Data())
	}
	name, ok := strings.CutPrefix(ref, rc.b.pay.bucket+"/"+runObjectPrefix)
	if !ok || len(m.Data()) > 0 {
		return nil, fmt.Errorf("%w: run request reference %q is not a run object of %s (or the message has a body too)", events.ErrPayload, ref, rc.b.pay.bucket)
	}
	ctx, cancel := rc.b.pay.budget(rc.runCtx, 0)
	defer cancel()
	body, err := rc.b.pay.get(ctx, runObjectPrefix+name)
	if err != nil {
		return nil, fmt.Errorf("%w: run request at %q: %w", ErrClaimCheck, ref, err)
	}
	return events.DecodeRunRequest(body)
}

// refuse dead-letters and terminates a request that must not run (a body
// naming another agent than its subject, an answer the handler refused),
// saying why.
func (rc *RunConsumer) refuse(m jetstream.Msg, req *events.RunRequest, why error) {
	rc.refused.Add(1)
	rc.b.log.Error("hookbus: run request refused", "run", req.RunID, "agent", req.AgentID, "subject", m.Subject(), "dead_letter", rc.dlq, "reason", why)
	meta, err := m.Metadata()
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), rc.b.opts.timeout)
		err = rc.b.deadLetter(ctx, rc.dlq, rc.cfg.Durable, m, meta, why)
		cancel()
	}
	if err != nil {
		rc.b.log.Warn("hookbus: dead letter not written", "run", req.RunID, "error", err)
	}
	if err := m.TermWithReason(oneLine(why.Error(), 200)); err != nil {
		rc.b.log.Warn("hookbus: term failed", "error", err)
	}
}

// run calls the handler while renewing the request's lease.
func (rc *RunConsumer) run(m jetstream.Msg, req *events.RunRequest) (err error) {
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(max(rc.cfg.AckWait/3, 100*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if err := m.InProgress(); err != nil {
					rc.b.log.Warn("hookbus: run progress not reported", "run", req.RunID, "error", err)
				}
			}
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("run handler panic: %v", r)
		}
	}()
	return rc.handler(rc.runCtx, req)
}
