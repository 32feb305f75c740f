package bus

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go/jetstream"
)

// Fence is an attempt's claim on a session: the stream sequence of the
// run.started event the attempt published. A fenced publish is stored only
// while that run.started is still the session's last one, so once another
// attempt (a worker that took the run over, or another run of the session)
// has claimed the session, the old attempt can no longer write ahead: it
// cannot start a tool or end the run. One writer per session.
type Fence struct {
	// Subject is the session's run.started subject.
	Subject string
	// Seq is the stream sequence of the claiming run.started.
	Seq uint64
}

// Claim publishes e, an attempt's run.started event, as PublishSync does,
// and returns the fence it sets on the session. It returns an error
// wrapping ErrInvalidOption when e is not a run.started event, or
// PublishSync's errors.
func (b *Bus) Claim(ctx context.Context, e *events.Event) (Fence, error) {
	if e == nil || e.Stage != events.StageRunStarted {
		return Fence{}, invalid("claim: only a run.started event claims a session")
	}
	msg, err := b.eventMsg(ctx, e)
	if err != nil {
		return Fence{}, err
	}
	ack, err := b.publishAcked(ctx, msg, e.ID)
	if err != nil {
		return Fence{}, err
	}
	return Fence{Subject: msg.Subject, Seq: ack.Sequence}, nil
}

// FencedError is the error of a fenced publish refused because another
// attempt claimed the session; it matches ErrFenced with errors.Is.
type FencedError struct {
	// By is the run.started event that claimed the session last.
	By  *events.Event
	msg string
}

func (e *FencedError) Error() string        { return e.msg }
func (e *FencedError) Is(target error) bool { return target == ErrFenced }

// maxRefence bounds how often one fenced publish moves its fence past
// foreign messages before it gives up.
const maxRefence = 3

// PublishFenced publishes e as PublishSync does, on condition that no
// attempt has claimed e's session since f (JetStream checks it atomically:
// Nats-Expected-Last-Subject-Sequence on f.Subject). Messages on the claim
// subject that are not valid run.started events (a foreign or malformed
// publish) claim nothing: PublishFenced moves f past them and publishes
// again. It returns a *FencedError (errors.Is ErrFenced) naming the
// claiming event when another attempt has claimed the session, an error
// wrapping ErrInvalidOption for a fence of another session, or
// PublishSync's errors.
func (b *Bus) PublishFenced(ctx context.Context, e *events.Event, f *Fence) error {
	if f == nil || f.Subject == "" || f.Seq == 0 {
		return invalid("publish fenced: an empty fence")
	}
	msg, err := b.eventMsg(ctx, e)
	if err != nil {
		return err
	}
	if want, err := b.subj.Event(e.AgentID, e.SessionID, events.StageRunStarted); err != nil || want != f.Subject {
		return invalid("publish fenced: the fence is on %s, the event of session %s/%s", f.Subject, e.AgentID, e.SessionID)
	}
	for moved := 0; ; moved++ {
		msg.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(f.Seq, 10))
		msg.Header.Set(jetstream.ExpectedLastSubjSeqSubjHeader, f.Subject)
		_, err := b.publishAcked(ctx, msg, e.ID)
		var apiErr *jetstream.APIError
		if err == nil || !errors.As(err, &apiErr) || apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence {
			return err
		}
		claim, last, serr := b.claimsSince(ctx, f)
		if serr != nil {
			return fmt.Errorf("%w: %w", err, serr)
		}
		if claim != nil {
			return &FencedError{By: claim, msg: fmt.Sprintf("%s: %s %s of run %s: session %s/%s was claimed by run %s (event %s)",
				ErrFenced, e.Stage, e.ID, e.RunID, e.AgentID, e.SessionID, claim.RunID, claim.ID)}
		}
		if moved >= maxRefence || last <= f.Seq {
			return err
		}
		b.log.Warn("hookbus: foreign messages on a session's claim subject; fence moved past them",
			"subject", f.Subject, "from", f.Seq, "to", last)
		f.Seq = last
	}
}

// claimsSince reads the messages on f.Subject after f.Seq: it returns the
// last one that is a valid run.started (a claim), or nil and the sequence of
// the last message when none is.
func (b *Bus) claimsSince(ctx context.Context, f *Fence) (*events.Event, uint64, error) {
	ctx, cancel := b.withTimeout(ctx)
	defer cancel()
	s, err := b.js.Stream(ctx, b.names.Events)
	if err != nil {
		return nil, 0, fmt.Errorf("hookbus: stream %s: %w", b.names.Events, ctxErr(ctx, err))
	}
	var claim *events.Event
	last := f.Seq
	for seq := f.Seq + 1; ; {
		m, err := s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(f.Subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return claim, last, nil
		}
		if err != nil {
			return nil, 0, fmt.Errorf("hookbus: reading claims on %s: %w", f.Subject, ctxErr(ctx, err))
		}
		if e, err := b.decodeStored(m.Subject, m.Header, m.Data); err == nil && e.Stage == events.StageRunStarted {
			claim = e
		}
		last, seq = m.Sequence, m.Sequence+1
	}
}
