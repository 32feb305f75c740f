package bus

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// One writer per session. Each attempt of a run claims its session by
// appending its run.started (Claim) on condition that the session's last
// claim is the one the attempt read; the stream sequence of its run.started
// is then its claim, and every other event of the attempt is appended
// (Append, AppendSync) on condition that this claim is still the session's
// last. JetStream checks the condition atomically when it stores the
// message (Nats-Expected-Last-Subject-Sequence on the session's run.started
// subject), so once another attempt has claimed the session, nothing the
// old attempt sends is stored: the stream never holds an event of a
// superseded attempt written after the claim that superseded it. See
// docs/PROTOCOL.md, "One writer per session".

// Append publishes e asynchronously as Publish does, fenced on claim: it is
// stored only while the last run.started of e's session is the one at
// stream sequence claim (0: while the session has none). Failures surface
// at Flush: a *FencedError (errors.Is ErrFenced) naming the run.started
// that claimed the session since, or Publish's failures. Messages on the
// claim subject that are not valid run.started events (a foreign or
// malformed publish) claim nothing: the append steps over them.
//
// It returns Publish's errors.
func (b *Bus) Append(ctx context.Context, e *events.Event, claim uint64) error {
	f, err := b.fenceOf(e, claim)
	if err != nil {
		return err
	}
	msg, err := b.eventMsg(ctx, e, f)
	if err != nil {
		return err
	}
	return b.publishAsync(ctx, msg, e, f)
}

// AppendSync publishes e fenced on claim as Append does, and returns once
// it is stored, as PublishSync does. It returns a *FencedError (errors.Is
// ErrFenced) when another attempt claimed the session, or PublishSync's
// errors.
func (b *Bus) AppendSync(ctx context.Context, e *events.Event, claim uint64) error {
	_, err := b.appendAcked(ctx, e, claim)
	return err
}

// Claim appends e, an attempt's run.started event, on condition that the
// session's last claim is still last (the stream sequence of the last
// run.started the attempt read; 0 when it read none), and returns the
// stream sequence e was stored at: the attempt's claim, for Append and
// AppendSync. It returns an error wrapping ErrInvalidOption when e is not a
// run.started event, a *FencedError naming the run.started that claimed
// the session since last (read the session again and claim anew), or
// PublishSync's errors.
func (b *Bus) Claim(ctx context.Context, e *events.Event, last uint64) (uint64, error) {
	if e == nil || e.Stage != events.StageRunStarted {
		return 0, invalid("claim: only a run.started event claims a session")
	}
	return b.appendAcked(ctx, e, last)
}

// appendAcked publishes e fenced on claim, as AppendSync does, and returns
// the stream sequence it was stored at.
func (b *Bus) appendAcked(ctx context.Context, e *events.Event, claim uint64) (uint64, error) {
	f, err := b.fenceOf(e, claim)
	if err != nil {
		return 0, err
	}
	msg, err := b.eventMsg(ctx, e, f)
	if err != nil {
		return 0, err
	}
	ack, err := b.publishAcked(ctx, msg, e, f)
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// Reclaim appends e, the run.started of an attempt that resumes a run an
// earlier attempt claimed (and that appended nothing before its claim), on
// condition that nothing was stored on e's session after stream sequence
// seen: the session's last event as the attempt read it. last is the
// session's last claim as read (not 0). JetStream checks the condition on
// the session's subjects (<prefix>.evt.<agent>.<session>.>), so an earlier
// attempt still alive cannot store an event between this attempt's read
// and its claim (an event the rebuild would then drop as superseded,
// although its effect, a tool run or the run's end, happened). Messages
// there that are not valid events claim nothing and are stepped over.
//
// It returns what Claim returns; when valid events were stored on the
// session since seen but no newer claim, a *FencedError naming the
// session's last claim (the one at last): read the session again and claim
// anew.
func (b *Bus) Reclaim(ctx context.Context, e *events.Event, last, seen uint64) (uint64, error) {
	if e == nil || e.Stage != events.StageRunStarted {
		return 0, invalid("reclaim: only a run.started event claims a session")
	}
	if last == 0 {
		return 0, invalid("reclaim: the session has no claim to take over")
	}
	cf, err := b.fenceOf(e, last)
	if err != nil {
		return 0, err
	}
	session, err := b.subj.EventFilter(e.AgentID, e.SessionID, "")
	if err != nil {
		return 0, err
	}
	f := &fence{subject: session, claim: seen, claimSubject: cf.subject, lastClaim: last}
	msg, err := b.eventMsg(ctx, e, f)
	if err != nil {
		return 0, err
	}
	ack, err := b.publishAcked(ctx, msg, e, f)
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// FencedError is the error of an append or claim refused because another
// attempt claimed the session; it matches ErrFenced with errors.Is.
type FencedError struct {
	// By is the run.started event that claimed the session last; its
	// Stored field is its stream sequence (the claim to append after).
	// For AppendAfter it is the first event stored on the session since
	// the sequence the caller read.
	By  *events.Event
	msg string
}

func (e *FencedError) Error() string        { return e.msg }
func (e *FencedError) Is(target error) bool { return target == ErrFenced }

// ClaimedBy returns the run.started event that claimed the session.
func (e *FencedError) ClaimedBy() *events.Event { return e.By }

// claimedBy is the *FencedError of e, refused because claim, a run.started
// stored since, claimed its session.
func claimedBy(e, claim *events.Event) *FencedError {
	return &FencedError{By: claim, msg: fmt.Sprintf("%s: event %s of run %s: session %s/%s was claimed by run %s (event %s, stream sequence %d)",
		ErrFenced, e.ID, e.RunID, claim.AgentID, claim.SessionID, claim.RunID, claim.ID, claim.Stored)}
}

// fence is the condition of a fenced publish: the session's run.started
// subject and the claim the caller holds.
type fence struct {
	subject string
	claim   uint64
	// A reclaim's fence is the session's subjects at the last event the
	// attempt read; claimSubject and lastClaim say where the claim it takes
	// over is.
	claimSubject string
	lastClaim    uint64
	// session is set for AppendAfter: subject is the session's, claim its
	// last message as read.
	session bool
}

// fenceHeaderSize bounds the fence headers of a message, the subject aside.
const fenceHeaderSize = len(jetstream.ExpectedLastSubjSeqHeader+": \r\n"+jetstream.ExpectedLastSubjSeqSubjHeader+": \r\n") + 20

func (b *Bus) fenceOf(e *events.Event, claim uint64) (*fence, error) {
	if e == nil {
		return nil, fmt.Errorf("%w: nil event", events.ErrMalformedEvent)
	}
	subject, err := b.subj.Event(e.AgentID, e.SessionID, events.StageRunStarted)
	if err != nil {
		return nil, err
	}
	return &fence{subject: subject, claim: claim}, nil
}

// set writes the fence headers of msg, expecting the claim subject's last
// message at expected.
func (f *fence) set(msg *nats.Msg, expected uint64) {
	vals := [...]string{strconv.FormatUint(expected, 10), f.subject}
	v := vals[:] // one backing array for both values
	msg.Header[jetstream.ExpectedLastSubjSeqHeader] = v[0:1:1]
	msg.Header[jetstream.ExpectedLastSubjSeqSubjHeader] = v[1:2:2]
}

// movedFences remembers the fences moved past foreign messages on a claim
// subject, so later appends of the same claim expect where the earlier ones
// ended up. It is empty unless something other than the loop wrote a claim
// subject.
type movedFences struct {
	n     atomic.Int32 // len(moved), read without the lock on the fast path
	mu    sync.Mutex
	moved map[fence]moved
}

type moved struct {
	to    uint64
	times int
}

// maxRefence bounds how often one claim's fence moves past foreign messages.
const maxRefence = 8

func (m *movedFences) expected(f *fence) uint64 {
	if m.n.Load() == 0 {
		return f.claim
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if mv, ok := m.moved[*f]; ok {
		return mv.to
	}
	return f.claim
}

// move records that f now expects to; false when it moved too often.
func (m *movedFences) move(f *fence, to uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.moved == nil {
		m.moved = make(map[fence]moved)
	}
	mv := m.moved[*f]
	if mv.times >= maxRefence {
		return false
	}
	if to > mv.to {
		mv.to = to
	}
	mv.times++
	m.moved[*f] = mv
	m.n.Store(int32(len(m.moved)))
	return true
}

// fenceRefused resolves a fenced publish of e (msg) refused because the
// claim subject's last message is not where f expected: when a valid
// run.started claimed the session since, it returns a *FencedError naming
// it; when only foreign messages were stored there, it moves f past them,
// rewrites msg's headers and returns nil (send msg again).
func (b *Bus) fenceRefused(ctx context.Context, e *events.Event, f *fence, msg *nats.Msg) error {
	if f.claimSubject != "" {
		return b.reclaimRefused(ctx, e, f, msg)
	}
	if f.session {
		return b.sessionRefused(ctx, e, f, msg)
	}
	cur := b.fences.expected(f)
	if sent := msg.Header.Get(jetstream.ExpectedLastSubjSeqHeader); sent != strconv.FormatUint(cur, 10) {
		// Another append of the claim moved the fence meanwhile: send
		// this one again where it is now.
		f.set(msg, cur)
		return nil
	}
	claim, last, err := b.claimsSince(ctx, f.subject, cur)
	if err != nil {
		return fmt.Errorf("%w: event %s: refused by its fence, and the claims cannot be read: %w", ErrPublish, e.ID, err)
	}
	if claim != nil {
		return claimedBy(e, claim)
	}
	return b.moveFence(e, f, msg, cur, last, "claim", "hookbus: foreign messages on a session's claim subject; fence moved past them")
}

// moveFence moves f, which msg of e expected at cur, past the foreign
// messages up to last, logs so (logMsg) and rewrites msg's headers (send
// msg again). It returns an error wrapping ErrPublish when f cannot move:
// nothing is past cur, or it moved too often, and no message that is a
// valid what ("claim", "event") explains the refusal.
func (b *Bus) moveFence(e *events.Event, f *fence, msg *nats.Msg, cur, last uint64, what, logMsg string) error {
	if last <= cur || !b.fences.move(f, last) {
		return fmt.Errorf("%w: event %s: the fence on %s at %d does not hold and no %s explains it (last message %d)", ErrPublish, e.ID, f.subject, cur, what, last)
	}
	b.log.Warn(logMsg, "subject", f.subject, "from", cur, "to", last)
	f.set(msg, last)
	return nil
}

// reclaimRefused resolves a reclaim (Reclaim's msg of e) refused because
// the session's last message is not where f expected: a *FencedError naming
// a newer claim, or the last claim when valid events were stored since;
// nil after moving f past messages that are not valid events (send msg
// again).
func (b *Bus) reclaimRefused(ctx context.Context, e *events.Event, f *fence, msg *nats.Msg) error {
	cur := b.fences.expected(f)
	claim, _, err := b.claimsSince(ctx, f.claimSubject, f.lastClaim)
	if err != nil {
		return fmt.Errorf("%w: event %s: refused by its fence, and the claims cannot be read: %w", ErrPublish, e.ID, err)
	}
	if claim != nil {
		return claimedBy(e, claim)
	}
	stored, last, err := b.eventsSince(ctx, f.subject, cur)
	if err != nil {
		return fmt.Errorf("%w: event %s: refused by its fence, and the session cannot be read: %w", ErrPublish, e.ID, err)
	}
	if stored != nil {
		by, err := b.storedEvent(ctx, f.lastClaim)
		if err != nil {
			return fmt.Errorf("%w: event %s: refused by its fence, and the claim at %d cannot be read: %w", ErrPublish, e.ID, f.lastClaim, err)
		}
		return &FencedError{By: by, msg: fmt.Sprintf("%s: event %s of run %s: session %s/%s changed since it was read (%s of run %s stored at stream sequence %d)",
			ErrFenced, e.ID, e.RunID, e.AgentID, e.SessionID, stored.Stage, stored.RunID, stored.Stored)}
	}
	return b.moveFence(e, f, msg, cur, last, "event", "hookbus: foreign messages on a session's subjects; fence moved past them")
}

// eventsSince reads the messages on subject (a filter) after seq: it
// returns the first that is a valid event (Stored set), or nil and the
// sequence of the last message when none is.
func (b *Bus) eventsSince(ctx context.Context, subject string, seq uint64) (*events.Event, uint64, error) {
	var first *events.Event
	last, err := b.readSince(ctx, subject, seq, subject, func(e *events.Event) bool {
		first = e
		return true
	})
	if err != nil {
		return nil, 0, err
	}
	return first, last, nil
}

// readSince hands fn the valid events (Stored set) among the messages on
// subject (a filter) after seq, in order, until fn returns true, and
// returns the sequence of the last message read. Errors name what is read.
func (b *Bus) readSince(ctx context.Context, subject string, seq uint64, what string, fn func(*events.Event) bool) (uint64, error) {
	ctx, cancel := b.withTimeout(ctx)
	defer cancel()
	s, err := b.eventsStream(ctx)
	if err != nil {
		return 0, fmt.Errorf("hookbus: stream %s: %w", b.names.Events, deadline.Err(ctx, err))
	}
	for last := seq; ; {
		m, err := s.GetMsg(ctx, last+1, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return last, nil
		}
		if err != nil {
			return 0, fmt.Errorf("hookbus: reading %s: %w", what, deadline.Err(ctx, err))
		}
		last = m.Sequence
		if e, err := b.decodeStored(m.Subject, m.Header, m.Data); err == nil {
			e.Stored = m.Sequence
			if fn(e) {
				return last, nil
			}
		}
	}
}

// storedEvent reads the event at stream sequence seq.
func (b *Bus) storedEvent(ctx context.Context, seq uint64) (*events.Event, error) {
	ctx, cancel := b.withTimeout(ctx)
	defer cancel()
	s, err := b.eventsStream(ctx)
	if err != nil {
		return nil, fmt.Errorf("hookbus: stream %s: %w", b.names.Events, deadline.Err(ctx, err))
	}
	m, err := s.GetMsg(ctx, seq)
	if err != nil {
		return nil, deadline.Err(ctx, err)
	}
	e, err := b.decodeStored(m.Subject, m.Header, m.Data)
	if err != nil {
		return nil, err
	}
	e.Stored = m.Sequence
	return e, nil
}

// wrongLastSequence reports whether err is JetStream refusing a message
// whose expected last subject sequence does not hold.
func wrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// claimsSince reads the messages on subject after seq: it returns the last
// one that is a valid run.started (a claim, Stored set), or nil and the
// sequence of the last message when none is.
func (b *Bus) claimsSince(ctx context.Context, subject string, seq uint64) (*events.Event, uint64, error) {
	var claim *events.Event
	last, err := b.readSince(ctx, subject, seq, "claims on "+subject, func(e *events.Event) bool {
		if e.Stage == events.StageRunStarted {
			claim = e
		}
		return false
	})
	if err != nil {
		return nil, 0, err
	}
	return claim, last, nil
}
