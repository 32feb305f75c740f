package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// StoredMessage is one message of the events stream as stored, whether it
// is a hookbus event or not (a malformed or foreign message, which Replay,
// Tail and observers skip): what a reader that must account for every
// message (the checkpointer, a verifier of checkpoints) reads.
type StoredMessage struct {
	Seq     uint64    // stream sequence
	Time    time.Time // when the stream stored it
	Subject string
	Header  nats.Header
	Data    []byte // the body as stored (empty for a claim-checked event)

	// Event is the message decoded as Replay decodes it (checked against
	// the subject it was stored on), its claim-checked data fetched into
	// Event.Data; nil when the message is not a hookbus event.
	Event *events.Event
	// NotEvent says why Event is nil.
	NotEvent error
	// DataGone is set when Event is claim-checked and its object is gone
	// for good (expired, deleted): Event.Data is then empty.
	DataGone bool
}

// DecodeStored sets m.Event (or m.NotEvent) from m's subject, header and
// data, and fetches a claim-checked event's data from the payloads object
// store (DataGone when it is gone for good). It returns an error wrapping
// ErrClaimCheck only when the data cannot be fetched for a reason that may
// pass (a timeout, a lost connection).
func (b *Bus) DecodeStored(ctx context.Context, m *StoredMessage) error {
	e, err := b.decodeStored(m.Subject, m.Header, m.Data)
	if err != nil {
		m.Event, m.NotEvent = nil, err
		return nil
	}
	e.Stored = m.Seq
	gone, err := b.pay.Fetch(ctx, e)
	if err != nil && !gone {
		return err
	}
	m.Event, m.NotEvent, m.DataGone = e, nil, gone
	return nil
}

// StreamState is the events stream's extent and retention limits, as the
// server reports them.
type StreamState struct {
	FirstSeq, LastSeq uint64
	Msgs, Bytes       uint64
	// Now is the server's time when it answered: compare stored times
	// with it, not with the local clock.
	Now time.Time
	// MaxAge, MaxMsgs and MaxBytes are the stream's limits (0: none): the
	// only ways JetStream itself removes events (the oldest first).
	MaxAge            time.Duration
	MaxMsgs, MaxBytes int64
	// MaxMsgSize is the stream's limit on one message (0: the server's);
	// DiscardNew is set when the stream refuses new messages at MaxMsgs
	// and MaxBytes rather than removing the oldest.
	MaxMsgSize int64
	DiscardNew bool
}

// EventsState returns the events stream's state. The error wraps
// ErrConsumer when the stream cannot be read.
func (b *Bus) EventsState(ctx context.Context) (StreamState, error) {
	ctx, cancel := b.withTimeout(ctx)
	defer cancel()
	s, err := b.eventsStream(ctx)
	if err != nil {
		return StreamState{}, fmt.Errorf("%w: stream %s: %w", ErrConsumer, b.names.Events, deadline.Err(ctx, err))
	}
	info, err := s.Info(ctx)
	if err != nil {
		return StreamState{}, fmt.Errorf("%w: stream %s: %w", ErrConsumer, b.names.Events, deadline.Err(ctx, err))
	}
	return StreamState{
		FirstSeq: info.State.FirstSeq, LastSeq: info.State.LastSeq, Msgs: info.State.Msgs, Bytes: info.State.Bytes, Now: info.TimeStamp,
		MaxAge: info.Config.MaxAge, MaxMsgs: info.Config.MaxMsgs, MaxBytes: info.Config.MaxBytes,
		MaxMsgSize: max(int64(info.Config.MaxMsgSize), 0), DiscardNew: info.Config.Discard == jetstream.DiscardNew,
	}, nil
}

// ReadStream calls fn for every message of the events stream from stream
// sequence from on (0 reads from the first), in stream order, up to the last
// message stored when ReadStream starts, each decoded as DecodeStored does.
// Unlike Replay it skips nothing: a message that is not a hookbus event
// reaches fn with Event nil. fn's error stops the read and is returned as
// is; otherwise the errors are those of Replay.
func (b *Bus) ReadStream(ctx context.Context, from uint64, fn func(*StoredMessage) error) error {
	st, err := b.EventsState(ctx)
	if err != nil {
		return err
	}
	if st.Msgs == 0 || from > st.LastSeq {
		return nil
	}
	// The last message stored, as the leader has it: the stream's last
	// sequence may be a deleted message's.
	last, ok, err := b.lastSeq(ctx, []string{b.subj.AllEvents()}, time.Time{})
	if err != nil || !ok || from > last {
		return err
	}
	return b.readOrdered(ctx, orderedRead{policy: jetstream.DeliverAllPolicy, from: from, until: last}, func(m jetstream.Msg, meta *jetstream.MsgMetadata) (bool, error) {
		sm := &StoredMessage{Seq: meta.Sequence.Stream, Time: meta.Timestamp, Subject: m.Subject(), Header: m.Headers(), Data: m.Data()}
		if err := b.DecodeStored(ctx, sm); err != nil {
			return true, err
		}
		if err := fn(sm); err != nil {
			return true, err
		}
		return meta.Sequence.Stream >= last, nil
	})
}

// GetStored returns the message stored at seq, or the first one after it
// when seq holds none (deleted or expired), decoded as DecodeStored does;
// nil when no message is stored at or after seq. The error wraps
// ErrConsumer when the stream cannot be read.
func (b *Bus) GetStored(ctx context.Context, seq uint64) (*StoredMessage, error) {
	rctx, cancel := b.withTimeout(ctx)
	defer cancel()
	s, err := b.eventsStream(rctx)
	if err != nil {
		return nil, fmt.Errorf("%w: stream %s: %w", ErrConsumer, b.names.Events, deadline.Err(rctx, err))
	}
	raw, err := s.GetMsg(rctx, seq, jetstream.WithGetMsgSubject(b.subj.AllEvents()))
	if err != nil {
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: stream %s: message %d: %w", ErrConsumer, b.names.Events, seq, deadline.Err(rctx, err))
	}
	sm := &StoredMessage{Seq: raw.Sequence, Time: raw.Time, Subject: raw.Subject, Header: raw.Header, Data: raw.Data}
	if err := b.DecodeStored(ctx, sm); err != nil {
		return nil, err
	}
	return sm, nil
}
