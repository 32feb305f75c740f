package runs

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Consumer is a running worker on the run queue.
type Consumer struct {
	q       *Queue
	cfg     ConsumerConfig
	handler Handler
	dlq     string
	id      string // the worker's key in the workers bucket
	started time.Time

	runCtx     context.Context // cancelled by Stop and HandBack: the handlers' ctx
	cancelRuns context.CancelCauseFunc
	bgCtx      context.Context // heartbeats, the registry watch, adoption
	stopBg     context.CancelFunc
	fetching   atomic.Bool
	wg         sync.WaitGroup // slots
	bg         sync.WaitGroup
	closed     chan struct{}

	routes *routes

	received, completed, failed, dropped atomic.Uint64
	closedN, unavailable                 atomic.Uint64
	malformedN, abandoned, refused       atomic.Uint64
	handedOff, handedBack                atomic.Uint64
}

// Consume starts a worker on the run queue for cfg.Agents: durable pull
// consumers per agent (new runs on <prefix>.run.<agent>) and per agent and
// definition (runs pinned to one on <prefix>.run.<agent>.<digest>), shared
// by every worker of the pool that serves the agent. The worker registers its definitions in the fleet
// (Fleet), writes its presence there while it runs, and follows the
// registry: it pulls an agent's new runs only while its definition of the
// agent is the registered one. Its Concurrency slots are shared by every
// agent: it pulls only when a slot is free, so it never holds a request
// another worker could run. While handler runs, the request's lease is
// renewed (InProgress); the handler's Outcome settles it: Done acks it
// (confirmed by the server), an error or Retry naks it so that it is
// delivered again, Leave leaves it, Refuse dead-letters it, HandOff
// queues it again for its definition's workers; a malformed request is
// terminated and logged. Cancelling ctx stops the worker. Routes says
// what it takes.
//
// It returns an error wrapping ErrInvalidOption for a bad config,
// events.ErrInvalidID for a bad agent or digest, ErrFleet when the fleet's
// buckets cannot be used, ErrLegacyConsumer when an older hookbus' consumer
// of every agent is still in use, or ErrConsumer when JetStream refuses a
// consumer.
func (q *Queue) Consume(ctx context.Context, cfg ConsumerConfig, handler Handler) (*Consumer, error) {
	if handler == nil {
		return nil, invalid("nil run handler")
	}
	if err := cfg.defaults(q.b.Outage()); err != nil {
		return nil, err
	}
	dlq, err := q.subj.DeadLetter(cfg.Durable)
	if err != nil {
		return nil, invalid("durable %q: %v", cfg.Durable, err)
	}
	rc := &Consumer{q: q, cfg: cfg, handler: handler, closed: make(chan struct{}), dlq: dlq,
		id: events.NewID(), started: time.Now().UTC()}
	rc.routes, err = q.newRoutes(ctx, rc)
	if err != nil {
		return nil, err
	}
	rc.runCtx, rc.cancelRuns = context.WithCancelCause(context.WithoutCancel(ctx))
	rc.bgCtx, rc.stopBg = context.WithCancel(context.WithoutCancel(ctx))
	if err := rc.routes.start(ctx); err != nil {
		rc.stopBg()
		rc.cancelRuns(nil)
		return nil, err
	}
	rc.fetching.Store(true)
	for i := 0; i < cfg.Concurrency; i++ {
		rc.wg.Add(1)
		go rc.slot()
	}
	go func() {
		rc.wg.Wait()
		rc.cancelRuns(nil)
		rc.stopBg()
		rc.routes.stop()
		rc.bg.Wait()
		dctx, cancel := context.WithTimeout(context.Background(), q.timeout)
		if err := rc.routes.fleet.deletePresence(dctx, rc.id); err != nil && !q.nc.IsClosed() {
			q.log.Warn("hookbus: worker presence not removed; it expires by itself", "worker", rc.cfg.Worker, "error", err)
		}
		cancel()
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
func (rc *Consumer) Stop() {
	rc.fetching.Store(false)
	rc.cancelRuns(nil)
}

// Drain ends the worker after its running handlers finish; no more
// requests are pulled. To bound a drain, call HandBack (or Stop) after it.
func (rc *Consumer) Drain() { rc.fetching.Store(false) }

// HandBack ends the worker without ending its runs: no more requests are
// pulled, and running handlers' ctx is cancelled with ErrHandedBack as its
// cause. A handler that then returns an error has its request queued again
// at once on its subject, as a hand-off (no delivery attempt used up), so
// that another worker resumes the run. Closed tells when every handler has
// returned.
func (rc *Consumer) HandBack() {
	rc.fetching.Store(false)
	rc.cancelRuns(ErrHandedBack)
}

// Closed is closed once the worker has stopped pulling, every handler has
// returned and its presence is removed.
func (rc *Consumer) Closed() <-chan struct{} { return rc.closed }

// Worker is the worker's id in the workers bucket.
func (rc *Consumer) Worker() string { return rc.id }

// Routes says what the worker takes of each agent's requests now, in the
// order of ConsumerConfig.Agents.
func (rc *Consumer) Routes() []AgentRoute { return rc.routes.snapshot() }

// Stats returns the worker's counters.
func (rc *Consumer) Stats() ConsumerStats {
	return ConsumerStats{
		Received: rc.received.Load(), Completed: rc.completed.Load(), Failed: rc.failed.Load(),
		Dropped: rc.dropped.Load(), Closed: rc.closedN.Load(), Unavailable: rc.unavailable.Load(), Malformed: rc.malformedN.Load(), Abandoned: rc.abandoned.Load(),
		Refused: rc.refused.Load(), HandedOff: rc.handedOff.Load(), HandedBack: rc.handedBack.Load(),
	}
}

// slot is one of the worker's Concurrency slots: pull one request from the
// next source, run it, repeat.
func (rc *Consumer) slot() {
	defer rc.wg.Done()
	for rc.fetching.Load() {
		if rc.q.nc.IsClosed() {
			return
		}
		src, n, long, changed := rc.routes.next()
		switch {
		case src == nil:
			// Nothing to take now (no agent whose new runs are this
			// worker's, no definition of its own): wait for the registry
			// to change.
			rc.idle(changed, rc.cfg.PollWait)
		case src.digest != "":
			// Runs pinned to a definition are rare (resumptions after a
			// deploy, or after an approval): a quick look, no long poll.
			// Found empty while there are new runs to take, it is left
			// out of the turn for a short pull's time: a busy worker
			// would otherwise make an empty look for every run it takes.
			if !rc.pull(src, 0) {
				if long == 0 {
					rc.idle(changed, rc.cfg.PollWait/time.Duration(n))
				} else {
					src.quiet(minPollWait)
				}
			}
		default:
			// With fewer slots than agents, no slot can wait on every
			// agent's queue: short pulls go round them all, so a new run
			// is taken within about (agents/slots) x 100ms.
			wait := rc.cfg.PollWait
			if long > rc.cfg.Concurrency {
				wait = minPollWait
			}
			rc.pull(src, wait)
		}
	}
}

// idle waits d, or less when the sources change or the worker stops.
func (rc *Consumer) idle(changed <-chan struct{}, d time.Duration) {
	select {
	case <-changed:
	case <-time.After(d):
	case <-rc.runCtx.Done():
	}
}

// pull takes at most one request from src, waiting up to wait for one (0:
// only one already there), handles it, and reports whether there was one.
// The pull is never cancelled midway: a request the server sent to an
// abandoned pull would be stuck for AckWait.
func (rc *Consumer) pull(src *source, wait time.Duration) bool {
	var batch jetstream.MessageBatch
	var err error
	if wait > 0 {
		batch, err = src.consumer().Fetch(1, jetstream.FetchMaxWait(wait))
	} else {
		batch, err = src.consumer().FetchNoWait(1)
	}
	if err != nil {
		rc.pullFailed(src, err)
		return false
	}
	got := false
	for m := range batch.Messages() {
		got = true
		rc.handle(src, m)
	}
	if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, jetstream.ErrNoMessages) {
		rc.pullFailed(src, err)
	}
	return got
}

// pullFailed logs a failed pull, makes the consumer again when it is gone
// (removed by an operator, or for inactivity), and waits a poll interval.
func (rc *Consumer) pullFailed(src *source, err error) {
	rc.q.log.Warn("hookbus: run pull failed", "consumer", src.durable, "error", err)
	if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrConsumerDeleted) {
		ctx, cancel := context.WithTimeout(rc.bgCtx, rc.q.timeout)
		if err := rc.routes.bind(ctx, src); err != nil {
			rc.q.log.Warn("hookbus: run consumer not made again", "consumer", src.durable, "error", err)
		}
		cancel()
	}
	rc.idle(nil, rc.cfg.PollWait)
}
