package runs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/internal/header"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go/jetstream"
)

// What a worker does with a request it pulled: run it, acknowledge it,
// hand it back or to other workers, or refuse it.

// handle runs one request src gave the worker and settles it: an ack, a
// nak, a hand-off, a refusal, or nothing (left to the worker that holds the
// run now).
func (rc *Consumer) handle(src *source, m jetstream.Msg) {
	rc.received.Add(1)
	log := rc.q.log
	if !rc.fetching.Load() {
		_ = m.Nak() // stopping: give it straight to another worker
		return
	}
	req, err := rc.decode(m)
	if err != nil {
		rc.malformedN.Add(1)
		log.Warn("hookbus: malformed run request dropped", "consumer", src.durable, "subject", m.Subject(), "reason", err)
		if err := m.TermWithReason("malformed: " + header.OneLine(err.Error(), 200)); err != nil {
			log.Warn("hookbus: term failed", "error", err)
		}
		return
	}
	if agent, digest, err := rc.q.subj.ParseRun(m.Subject()); err != nil || agent != req.AgentID || digest != req.Definition {
		rc.refuse(m, req, fmt.Errorf("run request %s names agent %q and definition %q but was published on %s: refused",
			req.RunID, req.AgentID, req.Definition, m.Subject()))
		return
	}
	if src.digest == "" && !rc.routes.takesNew(src.agent) {
		// The agent's registered definition changed after this pull was
		// made: the request is for the workers of the new one.
		if rc.requeue(m, req, "", "new run of an agent whose registered definition is another now") {
			rc.handedOff.Add(1)
		}
		return
	}
	out, herr := rc.run(m, req)
	switch out.Then {
	case Done:
		if herr == nil {
			rc.ack(m, req)
			return
		}
	case Leave:
		rc.abandoned.Add(1)
		log.Warn("hookbus: run left to the worker that holds it now", "run", req.RunID, "agent", req.AgentID, "reason", herr)
		return
	case Refuse:
		rc.refuse(m, req, cmp.Or(herr, errors.New("refused by the run handler")))
		return
	case HandOff:
		if d := out.Definition; events.ValidateDigest(d) == nil && d != req.Definition {
			why := "recorded on definition " + events.ShortDigest(d)
			if herr != nil {
				why = herr.Error()
			}
			if rc.requeue(m, req, d, why) {
				rc.handedOff.Add(1)
			}
			return
		}
		herr = cmp.Or(herr, fmt.Errorf("hand-off to definition %q: not another definition's digest", out.Definition))
	}
	herr = cmp.Or(herr, errors.New("the run handler asked for another attempt"))
	if errors.Is(context.Cause(rc.runCtx), ErrHandedBack) {
		// The worker is stopping and its run did not end: another worker
		// resumes it now.
		// It is queued again on its subject, as a hand-off: being handed
		// back uses up none of the request's attempts (MaxDeliver).
		if rc.requeue(m, req, req.Definition, "the worker is stopping: the run is handed back unended, for another worker to resume") {
			rc.handedBack.Add(1)
		}
		return
	}
	meta, err := m.Metadata()
	if err == nil && rc.cfg.MaxDeliver > 0 && meta.NumDelivered >= uint64(rc.cfg.MaxDeliver) {
		rc.drop(m, req, meta.NumDelivered, herr)
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
func (rc *Consumer) ack(m jetstream.Msg, req *events.RunRequest) bool {
	ctx, cancel := context.WithTimeout(context.Background(), rc.q.timeout)
	err := m.DoubleAck(ctx)
	cancel()
	if err != nil {
		rc.q.log.Warn("hookbus: run ack failed; it may run again", "run", req.RunID, "error", err)
		return false
	}
	rc.completed.Add(1)
	return true
}

// requeue queues req again for other workers (pinned to digest, or
// unpinned for "") and acknowledges the original: a hand-off, not a
// delivery attempt. Its de-duplication id is derived from the original's
// stream sequence, so a hand-off repeated after a lost ack is queued once.
// When it cannot be queued the original goes back to the queue (a nak)
// and requeue reports false; it reports false too for a hand-off the
// stream already held (the original acknowledged again): one hand-off.
func (rc *Consumer) requeue(m jetstream.Msg, req *events.RunRequest, digest, why string) bool {
	meta, err := m.Metadata()
	if err != nil {
		rc.q.log.Warn("hookbus: run request without metadata; handed back", "run", req.RunID, "error", err)
		_ = m.NakWithDelay(time.Second)
		return false
	}
	r := *req
	r.Definition = digest
	id := "handoff." + rc.q.names.Runs + "." + strconv.FormatUint(meta.Sequence.Stream, 10)
	ctx, cancel := context.WithTimeout(rc.bgCtx, rc.q.timeout)
	dup, err := rc.q.enqueue(ctx, &r, id)
	cancel()
	if err != nil {
		rc.failed.Add(1)
		rc.q.log.Warn("hookbus: run not handed off; handed back to the queue", "run", req.RunID, "to", events.ShortDigest(digest), "error", err)
		_ = m.NakWithDelay(time.Second)
		return false
	}
	to := "its agent's new-run queue"
	if digest != "" {
		to = "the workers of definition " + events.ShortDigest(digest)
	}
	if dup {
		rc.q.log.Info("hookbus: run request's hand-off to "+to+" was queued already (its acknowledgement was lost); acknowledged again", "run", req.RunID, "agent", req.AgentID)
	} else {
		rc.q.log.Warn("hookbus: run request handed to "+to, "run", req.RunID, "agent", req.AgentID, "reason", why)
	}
	ctx, cancel = context.WithTimeout(context.Background(), rc.q.timeout)
	err = m.DoubleAck(ctx)
	cancel()
	if err != nil {
		rc.q.log.Warn("hookbus: ack of a handed-off run failed; its hand-off is queued once", "run", req.RunID, "error", err)
	}
	return !dup
}

// decode reads a run request (fetching a claim-checked one).
func (rc *Consumer) decode(m jetstream.Msg) (*events.RunRequest, error) {
	ref := m.Headers().Get(RefHeader)
	if ref == "" {
		return events.DecodeRunRequest(m.Data())
	}
	name, ok := strings.CutPrefix(ref, rc.q.pay.Bucket()+"/"+runObjectPrefix)
	if !ok || len(m.Data()) > 0 {
		return nil, fmt.Errorf("%w: run request reference %q is not a run object of %s (or the message has a body too)", events.ErrPayload, ref, rc.q.pay.Bucket())
	}
	ctx, cancel := rc.q.pay.Budget(rc.runCtx, 0)
	defer cancel()
	body, err := rc.q.pay.Get(ctx, runObjectPrefix+name)
	if err != nil {
		return nil, fmt.Errorf("%w: run request at %q: %w", ErrClaimCheck, ref, err)
	}
	return events.DecodeRunRequest(body)
}

// refuse dead-letters and terminates a request that must not run (a body
// naming another agent or definition than its subject, a request the
// handler refused), saying why.
func (rc *Consumer) refuse(m jetstream.Msg, req *events.RunRequest, why error) {
	rc.refused.Add(1)
	rc.q.log.Error("hookbus: run request refused", "run", req.RunID, "agent", req.AgentID, "subject", m.Subject(), "dead_letter", rc.dlq, "reason", why)
	ctx, cancel := context.WithTimeout(context.Background(), rc.q.timeout)
	err := rc.q.b.DeadLetter(ctx, rc.cfg.Durable, m, why)
	cancel()
	if err != nil {
		rc.q.log.Warn("hookbus: dead letter not written", "run", req.RunID, "error", err)
	}
	if err := m.TermWithReason(header.OneLine(why.Error(), 200)); err != nil {
		rc.q.log.Warn("hookbus: term failed", "error", err)
	}
}

// closeTimeout bounds the recording of a dropped run's end (Close).
const closeTimeout = 30 * time.Second

// drop terminates a request whose last attempt failed, after recording its
// run's end (Close) so that nobody waits for it.
func (rc *Consumer) drop(m jetstream.Msg, req *events.RunRequest, attempts uint64, herr error) {
	log := rc.q.log
	rc.dropped.Add(1)
	why := fmt.Errorf("its request was dropped after %d attempts, the last failing with: %w", attempts, herr)
	closed := "no: no closer"
	if rc.cfg.Close != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(rc.bgCtx), closeTimeout)
		err := rc.cfg.Close(ctx, req, why)
		cancel()
		if err != nil {
			closed = "no: " + err.Error()
		} else {
			rc.closedN.Add(1)
			closed = "yes"
		}
	}
	log.Error("hookbus: run dropped after its last attempt", "run", req.RunID, "agent", req.AgentID,
		"attempts", attempts, "error", herr, "end_recorded", closed)
	_ = m.TermWithReason("max deliveries: " + header.OneLine(herr.Error(), 200))
}

// run calls the handler while renewing the request's lease. An attempt
// that failed only because JetStream was unavailable (bus.Unavailable) is
// made again in this delivery after a back-off, the lease kept, until
// Outage passes: an election or a node away uses up none of the request's
// attempts.
func (rc *Consumer) run(m jetstream.Msg, req *events.RunRequest) (out Outcome, err error) {
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
					rc.q.log.Warn("hookbus: run progress not reported", "run", req.RunID, "error", err)
				}
			}
		}
	}()
	var until time.Time
	for try := 1; ; try++ {
		out, err = rc.call(req)
		if !rc.retryInPlace(out, err) {
			return out, err
		}
		now := time.Now()
		if until.IsZero() {
			until = now.Add(rc.cfg.Outage)
		}
		left := until.Sub(now)
		if left <= 0 {
			rc.q.log.Warn("hookbus: JetStream still unavailable after the outage bound; the run goes back to the queue",
				"run", req.RunID, "agent", req.AgentID, "outage", rc.cfg.Outage, "error", err)
			return out, err
		}
		rc.unavailable.Add(1)
		delay := min(unavailableBackoff(try), left)
		rc.q.log.Warn("hookbus: JetStream unavailable: the run's attempt waits and is made again (no attempt used up)",
			"run", req.RunID, "agent", req.AgentID, "retry_in", delay, "waits_up_to", left.Round(time.Second), "error", err)
		t := time.NewTimer(delay)
		select {
		case <-rc.runCtx.Done():
			t.Stop()
			return out, err
		case <-t.C:
		}
	}
}

// call calls the handler once; a panic is its error.
func (rc *Consumer) call(req *events.RunRequest) (out Outcome, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = Outcome{}, fmt.Errorf("run handler panic: %v", r)
		}
	}()
	return rc.handler(rc.runCtx, req)
}

// retryInPlace reports whether a handler's attempt is to be made again
// (Done or Retry with an error) and its error is JetStream being
// unavailable.
func (rc *Consumer) retryInPlace(out Outcome, err error) bool {
	return (out.Then == Done || out.Then == Retry) && err != nil && rc.cfg.Outage > 0 && rc.runCtx.Err() == nil && bus.Unavailable(err)
}

// unavailableBackoff is the wait before the try+1th attempt within one
// delivery: 1s, 2s, 4s, ... up to 15s.
func unavailableBackoff(try int) time.Duration {
	return min(time.Second<<min(try-1, 4), 15*time.Second)
}
