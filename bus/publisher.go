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

// Publish sends e to JetStream asynchronously on
// <prefix>.evt.<agent>.<session>.<stage> with Nats-Msg-Id = e.ID and returns
// once the message is queued on the connection. e itself is not kept, but
// its Data bytes are (as nats.go keeps a message for retries) until the
// publish is acknowledged: replace e.Data rather than modify it in place.
// The ack is tracked under e.RunID: a publish that fails for a reason that
// may pass (an ack that does not come, no stream answering during a leader
// election, a lost connection) is sent again with the same id (the
// duplicate window makes that safe), with back-off, until it is stored or
// the outage bound passes (WithPublishRetry); Flush reports what still
// failed. Publish waits for room when too many acks are pending
// (WithMaxPending), until ctx is done.
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
	msg, err := b.eventMsg(ctx, e, nil)
	if err != nil {
		return err
	}
	return b.publishAsync(ctx, msg, e, nil)
}

// PublishSync publishes e and returns only after JetStream acknowledged it
// (write-ahead: the event is stored before the effect it describes). An
// attempt whose ack does not come within the ack timeout, or that fails for
// a reason that may pass, is sent again with the same Nats-Msg-Id, with
// back-off, until the outage bound passes (WithPublishRetry); ctx bounds
// every attempt. A duplicate reported on a later attempt means an earlier
// one was stored and counts as stored; a duplicate on the FIRST attempt
// means another publisher stored a message under this event's id first,
// and is an error wrapping ErrDuplicate: the event was not stored. A large
// event is claim-checked as in Publish.
//
// It returns an error wrapping events.ErrMalformedEvent or
// events.ErrInvalidID, ErrPayloadTooLarge, ErrDuplicate, ErrPublish (with
// the cause: timeout, no stream, server rejection, ErrClaimCheck) or ctx's
// error.
func (b *Bus) PublishSync(ctx context.Context, e *events.Event) error {
	msg, err := b.eventMsg(ctx, e, nil)
	if err != nil {
		return err
	}
	_, err = b.publishAcked(ctx, msg, e, nil)
	return err
}

// Flush waits until every asynchronous publish of the run made before it is
// acknowledged, and returns the first failure of the run since the previous
// Flush (an error wrapping ErrPublish, ErrDuplicate, or a *FencedError for
// an append refused because another attempt claimed the session),
// forgetting it. Publishes of the run made while Flush waits are waited for
// too. Every pending publish ends in an ack or a failure within the outage
// bound (WithPublishRetry), so Flush ends without a deadline; it also
// returns ctx's error when ctx is done first.
func (b *Bus) Flush(ctx context.Context, runID string) error {
	return b.acks.flush(ctx, runID)
}

// eventMsg encodes e into a JetStream message, with f's headers when it is
// fenced. An event too large for one message has its data stored in the
// object store first (the claim check, payloads.go) and is sent with a
// dataref and no body.
func (b *Bus) eventMsg(ctx context.Context, e *events.Event, f *fence) (*nats.Msg, error) {
	if e == nil {
		return nil, fmt.Errorf("%w: nil event", events.ErrMalformedEvent)
	}
	subject, err := b.subj.Event(e.AgentID, e.SessionID, e.Stage)
	if err != nil {
		return nil, err
	}
	return b.eventMsgOn(ctx, e, f, subject)
}

// eventMsgOn is eventMsg on subject.
func (b *Bus) eventMsgOn(ctx context.Context, e *events.Event, f *fence, subject string) (*nats.Msg, error) {
	extra := 0
	if f != nil {
		extra = fenceHeaderSize + len(f.subject)
	}
	hdr := b.header()
	body, err := events.EncodeHeader(hdr, e)
	if err != nil {
		clear(hdr)
		b.hdrs.Put(hdr)
		return nil, err
	}
	msg, err := b.pay.Fit(ctx, e, &nats.Msg{Subject: subject, Header: hdr, Data: body}, extra)
	if errors.Is(err, ErrClaimCheck) {
		return nil, fmt.Errorf("%w: event %s: %w", ErrPublish, e.ID, err)
	}
	if err != nil {
		return nil, err
	}
	if f != nil {
		f.set(msg, b.fences.expected(f))
	}
	return msg, nil
}

// headerHint sizes a new message header for every header an event and a
// fence write, so that none grows it.
const headerHint = 24

// header returns an empty message header: one of an acknowledged message
// (recycle), or a new one.
func (b *Bus) header() events.Header {
	if h, ok := b.hdrs.Get().(events.Header); ok {
		return h
	}
	return make(events.Header, headerHint)
}

// recycle keeps the header of msg, acknowledged and never to be sent
// again, for another message.
func (b *Bus) recycle(msg *nats.Msg) {
	h := events.Header(msg.Header) // the type header returns
	msg.Header = nil
	clear(h)
	b.hdrs.Put(h)
}

// publishAsync queues msg (the encoding of e), tracked under e.RunID.
func (b *Bus) publishAsync(ctx context.Context, msg *nats.Msg, e *events.Event, f *fence) error {
	b.acks.add(msg, e.RunID, f)
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
		if retryable(err) {
			// The connection is down and its buffer full: the ack
			// tracker sends it again, with back-off, within the bound.
			b.acks.failed(b.js, msg, err)
			return nil
		}
		b.acks.drop(msg)
		return fmt.Errorf("%w: event %s: %w", ErrPublish, e.ID, err)
	}
}

// publishAcked publishes msg and waits for its ack, sending it again (same
// Nats-Msg-Id, so it is stored once) with back-off when an attempt's ack
// does not come within the ack timeout or the error may pass, until the
// outage bound. A fenced msg (f set) refused because the session's claim
// moved is resolved by fenceRefused: a *FencedError, or sent again past
// foreign messages.
func (b *Bus) publishAcked(ctx context.Context, msg *nats.Msg, e *events.Event, f *fence) (*jetstream.PubAck, error) {
	var giveUp time.Time
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, b.opts.ackTimeout)
		ack, err := b.js.PublishMsg(actx, msg)
		cancel()
		if err == nil {
			if ack.Duplicate && attempt == 0 {
				return nil, duplicateError(e, msg.Subject)
			}
			b.recycle(msg)
			return ack, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: event %s after %d attempts: %w", ErrPublish, e.ID, attempt+1, deadline.Err(ctx, err))
		}
		if f != nil && wrongLastSequence(err) {
			if ferr := b.fenceRefused(ctx, e, f, msg); ferr != nil {
				return nil, ferr
			}
			continue // sent again past foreign messages on the claim subject
		}
		lost := errors.Is(err, context.DeadlineExceeded) // this attempt's ack never came
		if !lost && !retryable(err) {
			return nil, fmt.Errorf("%w: event %s: %w", ErrPublish, e.ID, err)
		}
		now := time.Now()
		if giveUp.IsZero() {
			giveUp = now.Add(b.opts.outage)
		}
		if now.After(giveUp) {
			return nil, fmt.Errorf("%w: event %s: still failing after %s (%d attempts): %w", ErrPublish, e.ID, b.opts.outage, attempt+1, err)
		}
		wait := backoff(attempt)
		if inProcess(err) {
			wait = shortBackoff(attempt)
		}
		b.log.Debug("hookbus: publish retried", "subject", msg.Subject, "id", e.ID, "attempt", attempt+1, "in", wait, "error", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w: event %s after %d attempts: %w", ErrPublish, e.ID, attempt+1, ctx.Err())
		case <-t.C:
		}
	}
}

// backoff is the wait before the attempt after attempt n (from 0): 50 ms
// doubling to 2 s.
func backoff(n int) time.Duration {
	d := 50 * time.Millisecond
	for i := 0; i < n && d < 2*time.Second; i++ {
		d *= 2
	}
	return min(d, 2*time.Second)
}

// shortBackoff is the wait before sending again an append a replicated
// stream refused while it applies the claim's previous append: 1 ms
// doubling to 64 ms.
func shortBackoff(n int) time.Duration {
	return time.Millisecond << min(n, 6)
}

// inProcess reports whether err is a replicated stream refusing a fenced
// message while an earlier one on the same claim subject is not applied
// yet: it passes in a moment.
func inProcess(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

func duplicateError(e *events.Event, subject string) error {
	return fmt.Errorf("%w: event %s on %s: the stream already holds a message with this id, stored by another publisher; this event was not stored", ErrDuplicate, e.ID, subject)
}

// retryable reports whether a publish error may pass: the server or a
// stream leader is away for a while.
func retryable(err error) bool {
	if inProcess(err) {
		return true
	}
	return errors.Is(err, jetstream.ErrAsyncPublishTimeout) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, jetstream.ErrTooManyStalledMsgs) ||
		errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrReconnectBufExceeded) ||
		errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, context.DeadlineExceeded)
}

// ackTracker counts the pending asynchronous publishes of each run and keeps
// the run's first failure for Flush.
type ackTracker struct {
	b        *Bus
	mu       sync.Mutex
	runs     map[string]*runAcks
	inflight map[*nats.Msg]*inflight
}

type inflight struct {
	run      *runAcks
	fence    *fence    // set for an append
	attempts int       // sends after the first
	giveUp   time.Time // when retries stop: the first failure + the outage bound
}

type runAcks struct {
	id      string
	pending int
	err     error
	idle    chan struct{} // closed when pending reaches 0; nil unless Flush waits
}

func newAckTracker(b *Bus) *ackTracker {
	return &ackTracker{b: b, runs: make(map[string]*runAcks), inflight: make(map[*nats.Msg]*inflight)}
}

func (t *ackTracker) add(msg *nats.Msg, runID string, f *fence) {
	t.mu.Lock()
	r := t.runs[runID]
	if r == nil {
		r = &runAcks{id: runID}
		t.runs[runID] = r
	}
	r.pending++
	t.inflight[msg] = &inflight{run: r, fence: f}
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

// acked is jetstream's async ack handler. A duplicate on the first send is
// another publisher's message under this event's id: the event was not
// stored (ErrDuplicate).
func (t *ackTracker) acked(_ jetstream.JetStream, msg *nats.Msg, ack *jetstream.PubAck) {
	t.mu.Lock()
	defer t.mu.Unlock()
	in, ok := t.inflight[msg]
	if !ok {
		return
	}
	delete(t.inflight, msg)
	if ack != nil && ack.Duplicate && in.attempts == 0 && in.run.err == nil {
		in.run.err = fmt.Errorf("%w: event %s on %s: the stream already holds a message with this id, stored by another publisher; this event was not stored",
			ErrDuplicate, msg.Header.Get(events.HeaderMsgID), msg.Subject)
	}
	if in.attempts == 0 {
		// Sent once and acknowledged: nothing sends it again.
		t.b.recycle(msg)
	}
	t.doneLocked(in.run)
}

// failed is jetstream's async error handler (and publishAsync's, for a send
// refused while the connection is down). jetstream may call it with its
// publisher lock held (ack timeout), so whatever is sent again is sent from
// a goroutine.
func (t *ackTracker) failed(_ jetstream.JetStream, msg *nats.Msg, err error) {
	t.mu.Lock()
	in, ok := t.inflight[msg]
	if !ok {
		t.mu.Unlock()
		return
	}
	if in.fence != nil && wrongLastSequence(err) {
		t.mu.Unlock()
		go t.refenced(msg, in)
		return
	}
	now := time.Now()
	if in.giveUp.IsZero() {
		in.giveUp = now.Add(t.b.opts.outage)
	}
	if retryable(err) && now.Before(in.giveUp) {
		in.attempts++
		wait := backoff(in.attempts - 1)
		if inProcess(err) {
			wait = shortBackoff(in.attempts - 1)
		}
		t.mu.Unlock()
		t.b.log.Debug("hookbus: publish retried", "subject", msg.Subject, "id", msg.Header.Get(events.HeaderMsgID), "attempt", in.attempts, "in", wait, "error", err)
		time.AfterFunc(wait, func() { t.retry(msg) })
		return
	}
	t.failLocked(msg, in, fmt.Errorf("%w: event %s of run %s on %s after %d attempts: %w",
		ErrPublish, msg.Header.Get(events.HeaderMsgID), in.run.id, msg.Subject, in.attempts+1, err))
	t.mu.Unlock()
	t.b.log.Warn("hookbus: publish failed", "subject", msg.Subject, "id", msg.Header.Get(events.HeaderMsgID), "run", in.run.id, "error", err)
}

// refenced resolves an append refused because its session's claim moved:
// another attempt's claim fails the run's appends (a *FencedError for
// Flush); foreign messages on the claim subject are stepped over and the
// append is sent again.
func (t *ackTracker) refenced(msg *nats.Msg, in *inflight) {
	ctx, cancel := context.WithTimeout(context.Background(), t.b.opts.timeout)
	defer cancel()
	e := &events.Event{ID: msg.Header.Get(events.HeaderMsgID), RunID: in.run.id}
	err := t.b.fenceRefused(ctx, e, in.fence, msg)
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.inflight[msg]; !ok {
		return
	}
	if err != nil {
		t.failLocked(msg, in, err)
		return
	}
	in.attempts++
	go t.retry(msg)
}

// failLocked ends a publish with err, kept as its run's failure when it is
// the first; t.mu is held.
func (t *ackTracker) failLocked(msg *nats.Msg, in *inflight, err error) {
	delete(t.inflight, msg)
	if in.run.err == nil {
		in.run.err = err
	}
	t.doneLocked(in.run)
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
