package bus

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
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

// minPollWait is the shortest pull: a worker with more agents than slots
// pulls each agent's new runs this long at a time, going round them.
const minPollWait = 100 * time.Millisecond

// ServedAgent is an agent a worker serves, and the definition it runs it on.
type ServedAgent struct {
	// ID is the agent id.
	ID string
	// Definition is the definition the worker runs the agent on. With a
	// Digest, the worker registers it when the agent has none, takes the
	// agent's new runs only while it is the registered one, and takes the
	// runs pinned to it in any case. Without one (a library worker), the
	// worker takes the agent's new runs only while no definition of the
	// agent is registered.
	Definition events.Definition
	// Source says where the definition was read ("ops.yaml", "flags"),
	// for people reading the registry.
	Source string
	// Replace makes the worker's definition the registered one even when
	// another is (a deploy); a newer Version replaces it too.
	Replace bool
	// Adopt makes the worker, while its definition is the registered one,
	// also take the runs pinned to the agent's other definitions (the
	// definition's on_definition_change: adopt).
	Adopt bool
}

// Agents lists agents served without a definition of their own.
func Agents(ids ...string) []ServedAgent {
	out := make([]ServedAgent, len(ids))
	for i, id := range ids {
		out[i] = ServedAgent{ID: id}
	}
	return out
}

// RunConsumerConfig configures a loop worker's consumption of run requests.
// Every worker of one pool uses the same Durable.
type RunConsumerConfig struct {
	// Durable names the pool (default "hookbus-workers"): its consumers
	// are <Durable>-run-<agent>, <Durable>-run-<agent>-<digest> and
	// <Durable>-answers-<agent>, and its dead letters go to
	// <prefix>.dlq.<Durable>.
	Durable string
	// Agents are the agents the worker serves (at least one): it takes
	// requests of these agents only. Requests of an agent no worker
	// serves wait on the queue.
	Agents []ServedAgent
	// Worker names the worker in the fleet's buckets (default host:pid).
	Worker string
	// Concurrency is how many runs this worker handles at once, whatever
	// their agent (default 1).
	Concurrency int
	// AckWait is how long a run may go without a sign of life before it is
	// given to another worker (default 10m). While the handler runs, the
	// worker reports progress every AckWait/3, so a long run keeps its lease.
	AckWait time.Duration
	// MaxDeliver bounds the attempts of one request (default 5; -1 forever);
	// after the last failed attempt the request is dropped, loudly.
	MaxDeliver int
	// MaxAckPending bounds the requests in flight of each consumer across
	// the pool (default: the server's, 1000).
	MaxAckPending int
	// PollWait is how long one pull for work waits; Stop and Drain take up
	// to this long (default 1s).
	PollWait time.Duration
	// Heartbeat is how often the worker writes its presence in the
	// workers bucket (default DefaultHeartbeat; below PresenceTTL).
	Heartbeat time.Duration
}

// RunConsumerStats counts what a run consumer did since it started.
type RunConsumerStats struct {
	Received  uint64 // requests received, redeliveries included
	Completed uint64 // handled and acknowledged
	Failed    uint64 // handler errors, handed back to the queue
	Abandoned uint64 // left to the worker that holds the run now
	Dropped   uint64 // terminated after the last attempt
	Malformed uint64 // bodies that are not valid run requests (terminated)
	// Refused counts requests whose body names another agent or
	// definition than the subject they were published on: dead-lettered
	// and terminated, never run (subject permissions on
	// <prefix>.run.<agent> must mean something).
	Refused uint64
	// HandedOff counts requests queued again for other workers, never run
	// here: runs recorded on another definition (pinned to it), and new
	// runs taken just as another definition of their agent was registered.
	HandedOff uint64
}

// RunConsumer is a running worker on the run queue.
type RunConsumer struct {
	b       *Bus
	cfg     RunConsumerConfig
	handler RunHandler
	dlq     string
	id      string // the worker's key in the workers bucket
	started time.Time

	runCtx   context.Context // cancelled by Stop: the handlers' ctx
	stopRuns context.CancelFunc
	bgCtx    context.Context // heartbeats, the registry watch, adoption
	stopBg   context.CancelFunc
	fetching atomic.Bool
	wg       sync.WaitGroup // slots and answer pullers
	bg       sync.WaitGroup
	closed   chan struct{}

	routes *routes

	received, completed, failed, dropped atomic.Uint64
	malformedN, abandoned, refused       atomic.Uint64
	handedOff                            atomic.Uint64
}

// ConsumeRuns starts a worker on the run queue for cfg.Agents: durable pull
// consumers per agent (new runs on <prefix>.run.<agent>), per agent and
// definition (runs pinned to one on <prefix>.run.<agent>.<digest>) and per
// agent for answers to approvals, shared by every worker of the pool that
// serves the agent. The worker registers its definitions in the fleet
// (Fleet), writes its presence there while it runs, and follows the
// registry: it pulls an agent's new runs only while its definition of the
// agent is the registered one. Its Concurrency slots are shared by every
// agent: it pulls only when a slot is free, so it never holds a request
// another worker could run. While handler runs, the request's lease is
// renewed (InProgress); handler's nil error acks it (confirmed by the
// server); an error naks it so that it is delivered again; a Handoff
// queues it again for its definition's workers; a malformed request is
// terminated and logged. Cancelling ctx stops the worker. Routes says
// what it takes.
//
// It returns an error wrapping ErrInvalidOption for a bad config,
// events.ErrInvalidID for a bad agent or digest, ErrFleet when the fleet's
// buckets cannot be used, ErrLegacyConsumer when an older hookbus' consumer
// of every agent is still in use, or ErrConsumer when JetStream refuses a
// consumer.
func (b *Bus) ConsumeRuns(ctx context.Context, cfg RunConsumerConfig, handler RunHandler) (*RunConsumer, error) {
	if handler == nil {
		return nil, invalid("nil run handler")
	}
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	dlq, err := b.subj.DeadLetter(cfg.Durable)
	if err != nil {
		return nil, invalid("durable %q: %v", cfg.Durable, err)
	}
	rc := &RunConsumer{b: b, cfg: cfg, handler: handler, closed: make(chan struct{}), dlq: dlq,
		id: events.NewID(), started: time.Now().UTC()}
	rc.routes, err = b.newRoutes(ctx, rc)
	if err != nil {
		return nil, err
	}
	rc.runCtx, rc.stopRuns = context.WithCancel(context.WithoutCancel(ctx))
	rc.bgCtx, rc.stopBg = context.WithCancel(context.WithoutCancel(ctx))
	if err := rc.routes.start(ctx); err != nil {
		rc.stopBg()
		rc.stopRuns()
		return nil, err
	}
	rc.fetching.Store(true)
	for i := 0; i < cfg.Concurrency; i++ {
		rc.wg.Add(1)
		go rc.slot()
	}
	for _, rt := range rc.routes.list {
		rc.wg.Add(1)
		go rc.answers(rt.answers)
	}
	go func() {
		rc.wg.Wait()
		rc.stopRuns()
		rc.stopBg()
		rc.routes.stop()
		rc.bg.Wait()
		dctx, cancel := context.WithTimeout(context.Background(), b.opts.timeout)
		if err := rc.routes.fleet.deletePresence(dctx, rc.id); err != nil && !b.nc.IsClosed() {
			b.log.Warn("hookbus: worker presence not removed; it expires by itself", "worker", rc.cfg.Worker, "error", err)
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

// defaults fills in and checks a config.
func (cfg *RunConsumerConfig) defaults() error {
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
	if cfg.Heartbeat == 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.Worker == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "worker"
		}
		cfg.Worker = host + ":" + strconv.Itoa(os.Getpid())
	}
	if err := validDurable("durable", cfg.Durable); err != nil {
		return err
	}
	switch {
	case cfg.Concurrency < 0:
		return invalid("concurrency %d is negative", cfg.Concurrency)
	case cfg.AckWait < time.Second:
		return invalid("run ack wait %v (want >= 1s)", cfg.AckWait)
	case cfg.MaxDeliver < -1:
		return invalid("max deliver %d (want -1 or > 0)", cfg.MaxDeliver)
	case cfg.MaxAckPending < 0:
		return invalid("max ack pending %d is negative", cfg.MaxAckPending)
	case cfg.PollWait < minPollWait:
		return invalid("poll wait %v (want >= %v)", cfg.PollWait, minPollWait)
	case cfg.Heartbeat < 100*time.Millisecond || cfg.Heartbeat >= PresenceTTL:
		return invalid("heartbeat %v (want from 100ms to under %v)", cfg.Heartbeat, PresenceTTL)
	case len(cfg.Agents) == 0:
		return invalid("no agents: name the agents the worker serves")
	}
	seen := map[string]bool{}
	for _, a := range cfg.Agents {
		if err := events.ValidateID("agent", a.ID); err != nil {
			return err
		}
		if seen[a.ID] {
			return invalid("agent %q listed twice", a.ID)
		}
		seen[a.ID] = true
		if a.Definition.Digest != "" {
			if err := events.ValidateDigest(a.Definition.Digest); err != nil {
				return fmt.Errorf("agent %s: %w", a.ID, err)
			}
		}
		if (a.Replace || a.Adopt) && a.Definition.Digest == "" {
			return invalid("agent %q: replace and adopt need a definition", a.ID)
		}
	}
	return nil
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

// Closed is closed once the worker has stopped pulling, every handler has
// returned and its presence is removed.
func (rc *RunConsumer) Closed() <-chan struct{} { return rc.closed }

// Worker is the worker's id in the workers bucket.
func (rc *RunConsumer) Worker() string { return rc.id }

// Routes says what the worker takes of each agent's requests now, in the
// order of RunConsumerConfig.Agents.
func (rc *RunConsumer) Routes() []AgentRoute { return rc.routes.snapshot() }

// Stats returns the worker's counters.
func (rc *RunConsumer) Stats() RunConsumerStats {
	return RunConsumerStats{
		Received: rc.received.Load(), Completed: rc.completed.Load(), Failed: rc.failed.Load(),
		Dropped: rc.dropped.Load(), Malformed: rc.malformedN.Load(), Abandoned: rc.abandoned.Load(),
		Refused: rc.refused.Load(), HandedOff: rc.handedOff.Load(),
	}
}

// slot is one of the worker's Concurrency slots: pull one request from the
// next source, run it, repeat.
func (rc *RunConsumer) slot() {
	defer rc.wg.Done()
	for rc.fetching.Load() {
		if rc.b.nc.IsClosed() {
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
			if !rc.pull(src, 0) && long == 0 {
				rc.idle(changed, rc.cfg.PollWait/time.Duration(n))
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
func (rc *RunConsumer) idle(changed <-chan struct{}, d time.Duration) {
	select {
	case <-changed:
	case <-time.After(d):
	case <-rc.runCtx.Done():
	}
}

// answers pulls one agent's answers to approvals, one at a time.
func (rc *RunConsumer) answers(src *source) {
	defer rc.wg.Done()
	for rc.fetching.Load() {
		if rc.b.nc.IsClosed() {
			return
		}
		rc.pull(src, rc.cfg.PollWait)
	}
}

// pull takes at most one request from src, waiting up to wait for one (0:
// only one already there), handles it, and reports whether there was one.
// The pull is never cancelled midway: a request the server sent to an
// abandoned pull would be stuck for AckWait.
func (rc *RunConsumer) pull(src *source, wait time.Duration) bool {
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
func (rc *RunConsumer) pullFailed(src *source, err error) {
	rc.b.log.Warn("hookbus: run pull failed", "consumer", src.durable, "error", err)
	if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrConsumerDeleted) {
		ctx, cancel := context.WithTimeout(rc.bgCtx, rc.b.opts.timeout)
		if err := rc.routes.bind(ctx, src); err != nil {
			rc.b.log.Warn("hookbus: run consumer not made again", "consumer", src.durable, "error", err)
		}
		cancel()
	}
	rc.idle(nil, rc.cfg.PollWait)
}

func (rc *RunConsumer) handle(src *source, m jetstream.Msg) {
	rc.received.Add(1)
	log := rc.b.log
	if !rc.fetching.Load() {
		_ = m.Nak() // stopping: give it straight to another worker
		return
	}
	req, err := rc.decode(m)
	if err != nil {
		rc.malformedN.Add(1)
		log.Warn("hookbus: malformed run request dropped", "consumer", src.durable, "subject", m.Subject(), "reason", err)
		if err := m.TermWithReason("malformed: " + oneLine(err.Error(), 200)); err != nil {
			log.Warn("hookbus: term failed", "error", err)
		}
		return
	}
	if !src.answers {
		if agent, digest, err := rc.b.subj.ParseRun(m.Subject()); err != nil || agent != req.AgentID || digest != req.Definition {
			rc.refuse(m, req, fmt.Errorf("run request %s names agent %q and definition %q but was published on %s: refused",
				req.RunID, req.AgentID, req.Definition, m.Subject()))
			return
		}
		if src.digest == "" && !rc.routes.takesNew(src.agent) {
			// The agent's registered definition changed after this pull
			// was made: the request is for the workers of the new one.
			rc.requeue(m, req, "", "new run of an agent whose registered definition is another now")
			return
		}
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
	var ho Handoff
	if herr != nil && !src.answers && errors.As(herr, &ho) {
		if d := ho.HandOff(); events.ValidateDigest(d) == nil && d != req.Definition {
			rc.requeue(m, req, d, herr.Error())
			return
		}
	}
	if herr == nil {
		rc.ack(m, req)
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

// ack acknowledges a handled request, confirmed by the server.
func (rc *RunConsumer) ack(m jetstream.Msg, req *events.RunRequest) bool {
	ctx, cancel := context.WithTimeout(context.Background(), rc.b.opts.timeout)
	err := m.DoubleAck(ctx)
	cancel()
	if err != nil {
		rc.b.log.Warn("hookbus: run ack failed; it may run again", "run", req.RunID, "error", err)
		return false
	}
	rc.completed.Add(1)
	return true
}

// requeue queues req again for other workers (pinned to digest, or
// unpinned for "") and acknowledges the original: a hand-off, not a
// delivery attempt. Its de-duplication id is derived from the original's
// stream sequence, so a hand-off repeated after a lost ack is queued once.
// When it cannot be queued the original goes back to the queue.
func (rc *RunConsumer) requeue(m jetstream.Msg, req *events.RunRequest, digest, why string) {
	meta, err := m.Metadata()
	if err != nil {
		rc.b.log.Warn("hookbus: run request without metadata; handed back", "run", req.RunID, "error", err)
		_ = m.NakWithDelay(time.Second)
		return
	}
	r := *req
	r.Definition = digest
	id := "handoff." + rc.b.names.Runs + "." + strconv.FormatUint(meta.Sequence.Stream, 10)
	ctx, cancel := context.WithTimeout(rc.bgCtx, rc.b.opts.timeout)
	err = rc.b.submit(ctx, &r, id)
	cancel()
	if err != nil {
		rc.failed.Add(1)
		rc.b.log.Warn("hookbus: run not handed off; handed back to the queue", "run", req.RunID, "to", events.ShortDigest(digest), "error", err)
		_ = m.NakWithDelay(time.Second)
		return
	}
	to := "its agent's new-run queue"
	if digest != "" {
		to = "the workers of definition " + events.ShortDigest(digest)
	}
	rc.b.log.Warn("hookbus: run request handed to "+to, "run", req.RunID, "agent", req.AgentID, "reason", why)
	ctx, cancel = context.WithTimeout(context.Background(), rc.b.opts.timeout)
	err = m.DoubleAck(ctx)
	cancel()
	if err != nil {
		rc.b.log.Warn("hookbus: ack of a handed-off run failed; its hand-off is queued once", "run", req.RunID, "error", err)
	}
	rc.handedOff.Add(1)
}

// decode reads a run request (fetching a claim-checked one), or an answer
// to an approval (whose agent is its subject's).
func (rc *RunConsumer) decode(m jetstream.Msg) (*events.RunRequest, error) {
	kind, agent, err := rc.b.subj.ParseQueue(m.Subject())
	if err == nil && kind == "approval" {
		return decodeApproval(agent, m.Data())
	}
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
