package bus

import (
	"context"
	"fmt"

	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
)

// AppendAfter publishes e and returns the stream sequence it was stored at,
// on condition that the last message on e's session
// (<prefix>.evt.<agent>.<session>.>) is at stream sequence seen: the
// session's last event as the caller read it (0: the session had none).
// JetStream checks the condition when it stores e, so a writer that
// derived e from the session as it read it (its run, its seq) knows that
// nobody wrote the session in between. Writers that share a session
// without a claim (the Claude Code bridge: one process per hook) append
// this way, each retrying after reading again when it loses. Messages on
// the session that are not valid events are stepped over.
//
// It returns a *FencedError (errors.Is ErrFenced) whose By is the first
// event stored on the session after seen (read the session again, and
// derive e anew; e itself may be there when an earlier attempt's ack was
// lost), or PublishSync's errors.
func (b *Bus) AppendAfter(ctx context.Context, e *events.Event, seen uint64) (uint64, error) {
	return b.AppendAfterAs(ctx, e, seen, "")
}

// AppendAfterAs is AppendAfter on the subject of writer, a NATS user: e
// must be an approval.resolved, stored on
// <prefix>.evt.<agent>.<session>.approval.resolved.<writer> (see
// events.Subjects.ApprovalResolved), which deploy/nats lets only that user
// publish. An empty writer is AppendAfter. It returns AppendAfter's errors,
// and one wrapping events.ErrInvalidID for a writer that cannot be a
// subject token or ErrInvalidOption for another stage with a writer.
func (b *Bus) AppendAfterAs(ctx context.Context, e *events.Event, seen uint64, writer string) (uint64, error) {
	if e == nil {
		return 0, fmt.Errorf("%w: nil event", events.ErrMalformedEvent)
	}
	session, err := b.subj.EventFilter(e.AgentID, e.SessionID, "")
	if err != nil {
		return 0, err
	}
	f := &fence{subject: session, claim: seen, session: true}
	var msg *nats.Msg
	if writer == "" {
		msg, err = b.eventMsg(ctx, e, f)
	} else {
		if e.Stage != events.StageApprovalResolved {
			return 0, invalid("%s of run %s on the subject of writer %q: only approval.resolved has writers' subjects", e.Stage, e.RunID, writer)
		}
		var subject string
		if subject, err = b.subj.ApprovalResolved(e.AgentID, e.SessionID, writer); err == nil {
			msg, err = b.eventMsgOn(ctx, e, f, subject)
		}
	}
	if err != nil {
		return 0, err
	}
	ack, err := b.publishAcked(ctx, msg, e, f)
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// sessionRefused resolves an AppendAfter (msg of e) refused because the
// session's last message is not where f expected: a *FencedError naming the
// first event stored since, or nil after moving f past messages that are
// not valid events (send msg again).
func (b *Bus) sessionRefused(ctx context.Context, e *events.Event, f *fence, msg *nats.Msg) error {
	cur := b.fences.expected(f)
	stored, last, err := b.eventsSince(ctx, f.subject, cur)
	if err != nil {
		return fmt.Errorf("%w: event %s: refused by its fence, and the session cannot be read: %w", ErrPublish, e.ID, err)
	}
	if stored != nil {
		return &FencedError{By: stored, msg: fmt.Sprintf("%s: event %s of run %s: session %s/%s changed since it was read (%s %s of run %s stored at stream sequence %d)",
			ErrFenced, e.ID, e.RunID, e.AgentID, e.SessionID, stored.Stage, stored.ID, stored.RunID, stored.Stored)}
	}
	return b.moveFence(e, f, msg, cur, last, "event", "hookbus: foreign messages on a session's subjects; fence moved past them")
}
