package bus

import (
	"context"
	"errors"
	"fmt"

	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go/jetstream"
)

// LastEvent returns a session's last event of stage (every stage when
// stage is ""), with its stream sequence in Stored, claim-checked data
// fetched: one request to the server (the stream's last message on the
// session's subjects), whatever the session's length. It returns nil and
// no error when the session has no such event. A last message that is not
// a valid event is an error wrapping events.ErrMalformedEvent (read the
// session instead); other errors wrap ErrConsumer (the stream cannot be
// read) or ErrClaimCheck.
func (b *Bus) LastEvent(ctx context.Context, agent, session string, stage events.Stage) (*events.Event, error) {
	if err := checkSession(agent, session); err != nil {
		return nil, err
	}
	subject, err := b.subj.EventFilter(agent, session, stage)
	if err != nil {
		return nil, err
	}
	m, err := b.lastMsg(ctx, subject, "last event on "+subject)
	if m == nil || err != nil {
		return nil, err
	}
	e, err := b.decodeStored(m.Subject, m.Header, m.Data)
	if err != nil {
		return nil, fmt.Errorf("%w: the last message on %s (stream sequence %d) is not an event: %w", events.ErrMalformedEvent, subject, m.Sequence, err)
	}
	e.Stored = m.Sequence
	var unfetched int
	if err := b.fill(ctx, e, &unfetched); err != nil {
		return nil, err
	}
	if unfetched > 0 {
		return nil, fmt.Errorf("%w: the data of event %s is gone from the object store", ErrClaimCheck, e.ID)
	}
	return e, nil
}

// lastMsg returns the last message on subject, or nil when there is none.
// The error wraps ErrConsumer and names what was read.
func (b *Bus) lastMsg(ctx context.Context, subject, what string) (*jetstream.RawStreamMsg, error) {
	ctx, cancel := b.withTimeout(ctx)
	defer cancel()
	s, err := b.eventsStream(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: stream %s: %w", ErrConsumer, b.names.Events, deadline.Err(ctx, err))
	}
	m, err := s.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrConsumer, what, deadline.Err(ctx, err))
	}
	return m, nil
}

// WaitEvent returns the first event of a session's stage stored at stream
// sequence from or later for which match is true, whether it is stored
// already or yet to come (approval.resolved includes the answers on
// writers' subjects). It waits until ctx is done: give ctx a deadline.
// Claim-checked data is fetched. It returns an error wrapping
// events.ErrInvalidID for a bad id, ErrConsumer when the stream cannot be
// read, ErrClaimCheck when data cannot be fetched, or ctx's error.
func (b *Bus) WaitEvent(ctx context.Context, agent, session string, stage events.Stage, from uint64, match func(*events.Event) bool) (*events.Event, error) {
	if err := checkSession(agent, session); err != nil {
		return nil, err
	}
	filters, err := b.subj.EventFilters(agent, session, stage)
	if err != nil {
		return nil, err
	}
	var (
		malformed, unfetched int
		found                *events.Event
	)
	err = b.readOrdered(ctx, orderedRead{filters: filters, policy: jetstream.DeliverAllPolicy, from: max(from, 1)}, func(m jetstream.Msg, meta *jetstream.MsgMetadata) (bool, error) {
		e := b.decodeMsg(m, meta, &malformed)
		if e == nil {
			return false, nil
		}
		if err := b.fill(ctx, e, &unfetched); err != nil {
			return true, err
		}
		if match == nil || match(e) {
			found = e
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("hookbus: wait for %s of %s/%s: %w", stage, agent, session, err)
	}
	return found, nil
}
