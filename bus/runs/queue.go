package runs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/internal/claimcheck"
	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/hookbus/hookbus/bus/internal/header"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Queue is the run queue of a bus: the work queue of run requests
// (bus.Names.Runs) with the fleet of workers that take them, and the
// wake-ups of waiting runs (bus.Names.Wakes). It is safe for concurrent
// use. It implements the loop engine's Queue (WakeAt, Resume).
type Queue struct {
	b       *bus.Bus
	nc      *nats.Conn
	js      jetstream.JetStream
	subj    events.Subjects
	names   bus.Names
	log     *slog.Logger
	timeout time.Duration
	pay     *claimcheck.Store // the bus' claim check, for run requests too large for a message
}

// New returns the run queue of b. It does no I/O: b's Provision makes the
// streams and buckets the queue uses.
func New(b *bus.Bus) *Queue {
	return &Queue{b: b, nc: b.Conn(), js: b.JetStream(), subj: b.Subjects(), names: b.Names(),
		log: b.Logger(), timeout: b.Timeout(), pay: b.ClaimCheck()}
}

// withTimeout applies the bus' default timeout when ctx has no deadline.
func (q *Queue) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return deadline.Default(ctx, q.timeout)
}

// Submit queues a run request on <prefix>.run.<agent> (the runs work
// queue), or on <prefix>.run.<agent>.<digest> when it names the definition
// it must run on (RunRequest.Definition), and returns once JetStream
// stored it. Its Nats-Msg-Id is the run
// id, so submitting the same run again within the duplicate window queues
// it once (and returns nil). A zero SubmittedAt is set to now in the queued
// copy. It returns an error wrapping events.ErrInvalidID or
// events.ErrPayload for an invalid request, ErrPublish, or ctx's error.
func (q *Queue) Submit(ctx context.Context, req *events.RunRequest) error {
	return q.submit(ctx, req, "")
}

// Resume queues req, a run to go on with (RunRequest.Resume), under the
// de-duplication id id (the run's own id is its first request's): on
// <prefix>.run.<agent>.<digest> when req.Definition names the definition
// the run is recorded on (only workers holding it take it), else on
// <prefix>.run.<agent>. Errors are Submit's.
func (q *Queue) Resume(ctx context.Context, req *events.RunRequest, id string) error {
	if id == "" {
		return fmt.Errorf("%w: resume run without an id", events.ErrPayload)
	}
	return q.submit(ctx, req, id)
}

func (q *Queue) submit(ctx context.Context, req *events.RunRequest, msgID string) error {
	_, err := q.enqueue(ctx, req, msgID)
	return err
}

// enqueue is submit, reporting whether the stream already held a request
// under msgID (within its de-duplication window): nothing new was queued.
func (q *Queue) enqueue(ctx context.Context, req *events.RunRequest, msgID string) (dup bool, err error) {
	if req == nil {
		return false, fmt.Errorf("%w: nil run request", events.ErrPayload)
	}
	if err := req.Validate(); err != nil {
		return false, err
	}
	r := *req
	if r.SubmittedAt.IsZero() {
		r.SubmittedAt = time.Now().UTC()
	}
	body, err := json.Marshal(&r)
	if err != nil {
		return false, fmt.Errorf("%w: run %s: %v", events.ErrPayload, r.RunID, err)
	}
	subject, err := q.runSubject(&r)
	if err != nil {
		return false, err
	}
	id := r.RunID
	if msgID != "" {
		id = msgID
	}
	msg := &nats.Msg{Subject: subject, Header: nats.Header{jetstream.MsgIDHeader: []string{id}}, Data: body}
	if limit := q.pay.Limit(); limit > 0 && header.MsgSize(msg.Header, len(body)) > limit {
		// Too large for one message (a long prompt): the request travels
		// as a stub naming an object that holds it.
		sum := sha256.Sum256(body)
		name := runObjectPrefix + r.RunID + "/" + hex.EncodeToString(sum[:])
		meta := jetstream.ObjectMeta{Name: name, Description: "hookbus run request " + r.RunID,
			Metadata: map[string]string{"hookbus.run": r.RunID, "hookbus.agent": r.AgentID, "hookbus.session": r.SessionID}}
		if err := q.pay.PutData(ctx, name, body, meta); err != nil {
			return false, fmt.Errorf("%w: run %s: %w", ErrPublish, r.RunID, err)
		}
		msg.Header.Set(RefHeader, q.pay.Bucket()+"/"+name)
		msg.Data = nil
	}
	ctx, cancel := q.withTimeout(ctx)
	defer cancel()
	ack, err := q.js.PublishMsg(ctx, msg)
	if err != nil {
		return false, fmt.Errorf("%w: run %s: %w", ErrPublish, r.RunID, deadline.Err(ctx, err))
	}
	if ack.Duplicate {
		q.log.Debug("hookbus: run already queued", "run", r.RunID)
	}
	return ack.Duplicate, nil
}

// runSubject is the subject a request is queued on.
func (q *Queue) runSubject(r *events.RunRequest) (string, error) {
	if r.Definition != "" {
		return q.subj.RunPinned(r.AgentID, r.Definition)
	}
	return q.subj.Run(r.AgentID)
}

// Handler runs one requested run and says what becomes of its request:
// its Outcome, as controller-runtime's Reconciler returns a Result. A
// panic counts as an error.
type Handler func(ctx context.Context, req *events.RunRequest) (Outcome, error)

// Outcome is what a Handler decides for its request. The zero Outcome
// (Done) with a nil error acknowledges the request; an error never
// acknowledges one: with Done it hands the request back as Retry does.
type Outcome struct {
	// Then is what the queue does with the request.
	Then Action
	// Definition is HandOff's: the digest of the definition whose workers
	// take the request.
	Definition string
}

// Action is what the queue does with a handled request.
type Action uint8

const (
	// Done acknowledges the request: it leaves the queue (the run ended,
	// waits, or can never run). With an error, it is Retry.
	Done Action = iota
	// Retry hands the request back to the queue for another attempt, on
	// any worker, after a back-off; ConsumerConfig.MaxDeliver bounds the
	// attempts.
	Retry
	// Leave leaves the request alone: neither acknowledged nor handed
	// back. A handler leaves it when another worker holds the run now (its
	// attempt lost the session's claim): the request was delivered to that
	// worker, and acknowledging it here would end the other worker's
	// delivery (JetStream takes an ack of an earlier delivery for the
	// message's).
	Leave
	// Refuse refuses the request for good: it is dead-lettered with the
	// handler's error and terminated.
	Refuse
	// HandOff hands the request to the workers of another definition of
	// its agent (a run recorded on a definition this worker does not have):
	// it is queued again on <prefix>.run.<agent>.<digest> for
	// Outcome.Definition, and the original acknowledged. Nothing runs, and
	// the hand-off is no delivery attempt (MaxDeliver does not count it).
	// A Definition that is no digest, or the request's own, is Retry.
	HandOff
)

// RefHeader names, on a run request too large for one message, the
// payloads object that holds it ("<bucket>/run/<run id>/<hex SHA-256>");
// the message's body is then empty.
const RefHeader = "Hookbus-Run-Ref"

// runObjectPrefix starts the names of claim-checked run requests.
const runObjectPrefix = "run/"
