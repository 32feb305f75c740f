package bus

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Publisher is what the loop needs to write events: asynchronous publishes,
// write-ahead publishes and a per-run barrier. *Bus implements it.
type Publisher interface {
	Publish(ctx context.Context, e *events.Event) error
	PublishSync(ctx context.Context, e *events.Event) error
	Flush(ctx context.Context, runID string) error
}

var _ Publisher = (*Bus)(nil)

// Publish sends e to JetStream asynchronously on
// <prefix>.evt.<agent>.<session>.<stage> with Nats-Msg-Id = e.ID and returns
// once the message is queued on the connection. e itself is not kept, but
// its Data bytes are (as nats.go keeps a message for retries) until the
// publish is acknowledged: replace e.Data rather than modify it in place. The ack is tracked under
// e.RunID: a publish whose ack times out or finds no stream is sent again
// with the same id (the duplicate window makes that safe) up to the retry
// bound, and Flush reports what still failed. Publish waits for room when
// too many acks are pending (WithMaxPending), until ctx is done.
//
// An event larger than the payload limit (the server's max_payload, or
// WithMaxPayload when smaller) is claim-checked: its data is stored in the
// payloads object store first, then the event is queued with a dataref and
// an empty body (see ObjectName); readers fetch the data back. Publish then
// returns once the data is stored. e is not changed.
//
// It returns an error wrapping events.ErrMalformedEvent or
// events.ErrInvalidID for an invalid event, ErrPayloadTooLarge (the event
// does not fit even without its data), ErrPublish when the message could
// not be queued or a claim-checked event's data could not be stored (with
// ErrClaimCheck), or ctx's error.
func (b *Bus) Publish(ctx context.Context, e *events.Event) error {
	msg, err := b.eventMsg(ctx, e)
	if err != nil {
		return err
	}
	b.acks.add(msg, e.RunID)
	for {
		if err := ctx.Err(); err != nil {
			b.acks.drop(msg)
			return err
		}
		_, err := b.js.PublishMsgAsync(msg)
		if err == nil {
			return nil
		}
		if errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
			continue // every ack slot is taken: wait again for one
		}
		b.acks.drop(msg)
		return fmt.Errorf("%w: event %s: %w", ErrPublish, e.ID, err)
	}
}

// PublishSync publishes e and returns only after JetStream acknowledged it
// (write-ahead: the event is stored before the effect it describes). Like
// Publish, it waits for one ack up to the ack timeout and sends the event
// again, with the same Nats-Msg-Id, when the ack does not come or no stream
// answers, up to the retry bound (WithPublishRetry): a request lost with a
// server or a stream leader that went away is sent again rather than waited
// for until ctx ends. ctx bounds every attempt. A duplicate (the id was
// stored before) counts as stored. A large event is claim-checked as in
// Publish: its data is stored before the event is sent.
//
// It returns an error wrapping events.ErrMalformedEvent or
// events.ErrInvalidID, ErrPayloadTooLarge, ErrPublish (with the cause:
// timeout, no stream, server rejection, ErrClaimCheck) or ctx's error.
func (b *Bus) PublishSync(ctx context.Context, e *events.Event) error {
	msg, err := b.eventMsg(ctx, e)
	if err != nil {
		return err
	}
	_, err = b.publishAcked(ctx, msg, e.ID)
	return err
}

// publishAcked publishes msg and waits for its ack, sending it again (same
// Nats-Msg-Id, so it is stored once) when an attempt's ack does not come
// within the ack timeout or the error is retryable, up to the retry bound.
func (b *Bus) publishAcked(ctx context.Context, msg *nats.Msg, id string) (*jetstream.PubAck, error) {
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, b.opts.ackTimeout)
		ack, err := b.js.PublishMsg(actx, msg)
		cancel()
		if err == nil {
			return ack, nil
		}
		lost := actx.Err() != nil && ctx.Err() == nil // this attempt's ack never came
		if !(lost || retryable(err)) || ctx.Err() != nil || attempt >= b.opts.retries {
			return nil, fmt.Errorf("%w: event %s after %d attempts: %w", ErrPublish, id, attempt+1, ctxErr(ctx, err))
		}
		b.log.Debug("hookbus: publish retried", "subject", msg.Subject, "id", id, "attempt", attempt+1, "error", err)
	}
}

// Flush waits until every asynchronous publish of the run made before it is
// acknowledged, and returns the first failure of the run since the previous
// Flush (an error wrapping ErrPublish), forgetting it. Publishes of the run
// made while Flush waits are waited for too. Every pending publish ends in
// an ack or a failure within the retry bound (WithPublishRetry), so Flush
// ends without a deadline; it also returns ctx's error when ctx is done
// first.
func (b *Bus) Flush(ctx context.Context, runID string) error {
	return b.acks.flush(ctx, runID)
}

// eventMsg encodes e into a JetStream message. An event too large for one
// message has its data stored in the object store first (the claim check,
// payloads.go) and is sent with a dataref and no body.
func (b *Bus) eventMsg(ctx context.Context, e *events.Event) (*nats.Msg, error) {
	if e == nil {
		return nil, fmt.Errorf("%w: nil event", events.ErrMalformedEvent)
	}
	hdr, body, err := events.Encode(e)
	if err != nil {
		return nil, err
	}
	subject, err := b.subj.Event(e.AgentID, e.SessionID, e.Stage)
	if err != nil {
		return nil, err
	}
	msg, err := b.pay.fit(ctx, e, &nats.Msg{Subject: subject, Header: hdr, Data: body}, 0)
	if errors.Is(err, ErrClaimCheck) {
		return nil, fmt.Errorf("%w: event %s: %w", ErrPublish, e.ID, err)
	}
	return msg, err
}

// ackTracker counts the pending asynchronous publishes of each run and keeps
// the run's first failure for Flush.
type ackTracker struct {
	b        *Bus
	mu       sync.Mutex
	runs     map[string]*runAcks
	inflight map[*nats.Msg]inflight
}

type inflight struct {
	run      *runAcks
	attempts int
}

type runAcks struct {
	id      string
	pending int
	err     error
	idle    chan struct{} // closed when pending reaches 0; nil unless Flush waits
}

func newAckTracker(b *Bus) *ackTracker {
	return &ackTracker{b: b, runs: make(map[string]*runAcks), inflight: make(map[*nats.Msg]inflight)}
}

func (t *ackTracker) add(msg *nats.Msg, runID string) {
	t.mu.Lock()
	r := t.runs[runID]
	if r == nil {
		r = &runAcks{id: runID}
		t.runs[runID] = r
	}
	r.pending++
	t.inflight[msg] = inflight{run: r}
	t.mu.Unlock()
}

// drop forgets a publish that was never sent (its error went to the caller).
func (t *ackTracker) drop(msg *nats.Msg) {
	t.mu.Lock()
	if in, ok := t.inflight[msg]; ok {
		delete(t.inflight, msg)
		t.doneLocked(in.run)
	}
	t.mu.Unlock()
}

// acked is jetstream's async ack handler.
func (t *ackTracker) acked(_ jetstream.JetStream, msg *nats.Msg, _ *jetstream.PubAck) {
	t.mu.Lock()
	if in, ok := t.inflight[msg]; ok {
		delete(t.inflight, msg)
		t.doneLocked(in.run)
	}
	t.mu.Unlock()
}

// failed is jetstream's async error handler. jetstream may call it with its
// publisher lock held (ack timeout), so a retry is sent from a goroutine.
func (t *ackTracker) failed(_ jetstream.JetStream, msg *nats.Msg, err error) {
	t.mu.Lock()
	in, ok := t.inflight[msg]
	if !ok {
		t.mu.Unlock()
		return
	}
	if retryable(err) && in.attempts < t.b.opts.retries {
		in.attempts++
		t.inflight[msg] = in
		t.mu.Unlock()
		t.b.log.Debug("hookbus: publish retried", "subject", msg.Subject, "id", msg.Header.Get(events.HeaderMsgID), "attempt", in.attempts, "error", err)
		go t.retry(msg)
		return
	}
	delete(t.inflight, msg)
	if in.run.err == nil {
		in.run.err = fmt.Errorf("%w: event %s of run %s on %s after %d attempts: %w",
			ErrPublish, msg.Header.Get(events.HeaderMsgID), in.run.id, msg.Subject, in.attempts+1, err)
	}
	t.doneLocked(in.run)
	t.mu.Unlock()
	t.b.log.Warn("hookbus: publish failed", "subject", msg.Subject, "id", msg.Header.Get(events.HeaderMsgID), "run", in.run.id, "error", err)
}

func (t *ackTracker) retry(msg *nats.Msg) {
	for {
		_, err := t.b.js.PublishMsgAsync(msg)
		if err == nil {
			return
		}
		if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
			t.failed(nil, msg, err)
			return
		}
	}
}

func retryable(err error) bool {
	return errors.Is(err, jetstream.ErrAsyncPublishTimeout) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, jetstream.ErrTooManyStalledMsgs) ||
		errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, nats.ErrTimeout)
}

// doneLocked records the end of one publish of r; t.mu is held.
func (t *ackTracker) doneLocked(r *runAcks) {
	r.pending--
	if r.pending > 0 {
		return
	}
	if r.idle != nil {
		close(r.idle)
		r.idle = nil
	}
	if r.err == nil && t.runs[r.id] == r {
		delete(t.runs, r.id)
	}
}

func (t *ackTracker) flush(ctx context.Context, runID string) error {
	for {
		t.mu.Lock()
		r := t.runs[runID]
		if r == nil {
			t.mu.Unlock()
			return nil
		}
		if r.pending == 0 {
			err := r.err
			delete(t.runs, runID)
			t.mu.Unlock()
			return err
		}
		if r.idle == nil {
			r.idle = make(chan struct{})
		}
		idle := r.idle
		t.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return fmt.Errorf("hookbus: flush run %s: %w", runID, ctx.Err())
		}
	}
}
