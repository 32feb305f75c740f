package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"
)

// Filter selects events for Replay and Tail. Zero fields match everything.
type Filter struct {
	Agent   string
	Session string
	// Run keeps the events of one run (matched on the decoded runid, which
	// is not part of the subject).
	Run    string
	Stages []events.Stage
	// Since and Until bound the time the events were stored, inclusive.
	Since, Until time.Time
	// From, when set, is the stream sequence to start reading at (Since
	// is then not used to start).
	From uint64
}

// ReplayStats counts what a replay read.
type ReplayStats struct {
	Events    int // events given to fn
	Malformed int // messages that are not hookbus events, skipped
	Filtered  int // events read but not matching the filter (Run, Until)
	// Unfetched counts events given to fn without their data (also in
	// Events): claim-checked data gone for good from the object store
	// (expired, deleted). e.DecodeData names the reference.
	Unfetched int
}

func (b *Bus) replayFilters(f Filter) ([]string, error) {
	if f.Run != "" {
		if err := events.ValidateID("run", f.Run); err != nil {
			return nil, err
		}
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && f.Until.Before(f.Since) {
		return nil, invalid("filter until %v is before since %v", f.Until, f.Since)
	}
	return b.filterSubjects(f.Agent, f.Session, f.Stages)
}

// lastSeq returns the stream sequence of the last event matching filters
// (and stored at or after since), or false when there is none.
func (b *Bus) lastSeq(ctx context.Context, filters []string, since time.Time) (uint64, bool, error) {
	ctx, cancel := b.withTimeout(ctx)
	defer cancel()
	s, err := b.eventsStream(ctx)
	if err != nil {
		return 0, false, fmt.Errorf("%w: stream %s: %w", ErrConsumer, b.names.Events, deadline.Err(ctx, err))
	}
	var last uint64
	for _, f := range filters {
		m, err := s.GetLastMsgForSubject(ctx, f)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return 0, false, fmt.Errorf("%w: last event of %s: %w", ErrConsumer, f, deadline.Err(ctx, err))
		}
		if m.Time.Before(since) {
			continue
		}
		last = max(last, m.Sequence)
	}
	return last, last > 0, nil
}

// Replay calls fn for every event matching f that is in the stream when
// Replay starts, in stream order, and returns; events stored meanwhile are
// not waited for. An empty stream or no match returns at once. Messages that
// are not hookbus events are skipped, counted and logged. fn's error stops
// the replay and is returned as is.
//
// A claim-checked event (too large for a message) reaches fn with its data
// fetched from the payloads object store, DataRef still set. When the data
// is gone for good (expired, deleted) fn gets the event without it,
// counted in Unfetched and logged: e.DecodeData names the reference.
//
// It returns an error wrapping events.ErrInvalidID, events.ErrUnknownStage
// or ErrInvalidOption for a bad filter, ErrConsumer when the stream cannot
// be read, ErrClaimCheck when an event's data cannot be fetched for a
// reason that may pass (a timeout, a lost connection), or ctx's error.
func (b *Bus) Replay(ctx context.Context, f Filter, fn func(*events.Event) error) (ReplayStats, error) {
	var st ReplayStats
	filters, err := b.replayFilters(f)
	if err != nil {
		return st, err
	}
	last, ok, err := b.lastSeq(ctx, filters, f.Since)
	if err != nil || !ok || last < f.From {
		return st, err // nothing to read (nothing stored at or after From)
	}
	r := orderedRead{filters: filters, policy: jetstream.DeliverAllPolicy, since: f.Since, from: f.From, until: last}
	err = b.readOrdered(ctx, r, func(m jetstream.Msg, meta *jetstream.MsgMetadata) (bool, error) {
		if !f.Until.IsZero() && meta.Timestamp.After(f.Until) {
			return true, nil // stream order is storage-time order
		}
		if meta.Timestamp.Before(f.Since) {
			st.Filtered++
			return meta.Sequence.Stream >= last, nil
		}
		if e := b.decodeMsg(m, meta, &st.Malformed); e != nil {
			if f.Run != "" && e.RunID != f.Run {
				st.Filtered++
			} else {
				if err := b.fill(ctx, e, &st.Unfetched); err != nil {
					return true, err
				}
				st.Events++
				if err := fn(e); err != nil {
					return true, err
				}
			}
		}
		return meta.Sequence.Stream >= last, nil
	})
	return st, err
}

// Tail calls fn for every event matching f stored from now on (from
// f.Since when set), in stream order, until ctx is done, then returns nil.
// With f.Until set it returns nil at the first event stored after it.
// Malformed messages are skipped and logged; claim-checked data is fetched
// as in Replay. fn's error stops the tail and is returned as is; otherwise
// errors are those of Replay.
func (b *Bus) Tail(ctx context.Context, f Filter, fn func(*events.Event) error) error {
	filters, err := b.replayFilters(f)
	if err != nil {
		return err
	}
	var malformed, unfetched int
	err = b.readOrdered(ctx, orderedRead{filters: filters, policy: jetstream.DeliverNewPolicy, since: f.Since, from: f.From}, func(m jetstream.Msg, meta *jetstream.MsgMetadata) (bool, error) {
		if !f.Until.IsZero() && meta.Timestamp.After(f.Until) {
			return true, nil
		}
		e := b.decodeMsg(m, meta, &malformed)
		if e == nil || f.Run != "" && e.RunID != f.Run {
			return false, nil
		}
		if err := b.fill(ctx, e, &unfetched); err != nil {
			return true, err
		}
		return false, fn(e)
	})
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return err
}

// SessionEvents returns the events of a session the loop rebuilds it
// from, in stream order, claim-checked data fetched as in Replay: every
// event, or, when the session was compacted, those from the compacting
// run's first run.started on (compact.after's read_from: nothing before it
// shapes the conversation any more), so a long session rebuilds in bounded
// time and memory. A session this Bus has read before is read from where
// its last read started (readfrom.go), without asking for its last
// compaction first. Malformed messages are skipped and logged. Errors are
// those of Replay.
func (b *Bus) SessionEvents(ctx context.Context, agent, session string) ([]*events.Event, error) {
	if err := checkSession(agent, session); err != nil {
		return nil, err
	}
	if from, ok := b.froms.get(agent, session); ok {
		out, at, ok, err := b.sessionFrom(ctx, agent, session, from)
		if err != nil || ok {
			if ok {
				b.froms.put(agent, session, at)
			}
			return out, err
		}
		b.froms.drop(agent, session)
	}
	from, err := b.compactedFrom(ctx, agent, session)
	if err != nil {
		return nil, err
	}
	out, malformed, err := b.sessionEvents(ctx, agent, session, from, nil)
	if err == nil && malformed == 0 {
		// A session holding messages that are not events is always read
		// this way: one of them may be its last compaction.
		b.froms.put(agent, session, from)
	}
	return out, err
}

// sessionFrom reads a session from from, where its last read started,
// and cuts what it read at the read_from of the last compaction it holds
// (at). ok is false when the read cannot stand for a read from the
// session's last compaction: it holds none although from is past the
// start, or the last one reaches back before from or cannot be read.
func (b *Bus) sessionFrom(ctx context.Context, agent, session string, from uint64) (out []*events.Event, at uint64, ok bool, err error) {
	var last *events.Event
	out, malformed, err := b.sessionEvents(ctx, agent, session, from, func(e *events.Event) {
		if e.Stage == events.StageCompactAfter {
			last = e
		}
	})
	if err != nil || malformed > 0 {
		// A message that is not an event may be the session's last
		// compaction, one that cannot be read: read everything then.
		return nil, 0, false, err
	}
	if last == nil {
		return out, from, from == 0, nil
	}
	at = compactionReadFrom(last)
	switch {
	case at == 0 && from == 0:
		return out, 0, true, nil // read everything, as after a compaction that cannot be read
	case at == 0 || at < from:
		return nil, 0, false, nil
	}
	i := 0
	for i < len(out) && out[i].Stored < at {
		i++
	}
	return out[i:], at, true, nil
}

// sessionEvents replays a session from stream sequence from, calling each,
// when set, with every event read; malformed counts the messages skipped.
func (b *Bus) sessionEvents(ctx context.Context, agent, session string, from uint64, each func(*events.Event)) (out []*events.Event, malformed int, err error) {
	st, err := b.Replay(ctx, Filter{Agent: agent, Session: session, From: from}, func(e *events.Event) error {
		if each != nil {
			each(e)
		}
		out = append(out, e)
		return nil
	})
	return out, st.Malformed, err
}

// RunEvents returns every event of run in session, in stream order,
// claim-checked data fetched as in Replay, whether or not the session was
// compacted since (SessionEvents then starts after them). A run id that is
// a ULID (events.NewID) bounds the read: nothing of the run is stored
// before its id's time, less runIDSkew for the clocks of the machine that
// made it and the server. Errors are those of Replay.
func (b *Bus) RunEvents(ctx context.Context, agent, session, run string) ([]*events.Event, error) {
	if err := checkSession(agent, session); err != nil {
		return nil, err
	}
	f := Filter{Agent: agent, Session: session, Run: run}
	if id, err := ulid.ParseStrict(run); err == nil {
		if at := ulid.Time(id.Time()); at.Before(time.Now().Add(runIDSkew)) {
			f.Since = at.Add(-runIDSkew)
		}
	}
	var out []*events.Event
	_, err := b.Replay(ctx, f, func(e *events.Event) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// runIDSkew is how far the clock of the machine that made a run id may be
// ahead of the server's (RunEvents).
const runIDSkew = 5 * time.Minute

// WaitRun returns the terminal event (run.completed or run.failed) of a
// run, whether it is already stored or yet to come. It waits until ctx is
// done: give ctx a deadline. Claim-checked data is fetched as in Replay.
// It returns an error wrapping events.ErrInvalidID for a bad id,
// ErrConsumer when the stream cannot be read, ErrClaimCheck when the
// event's data cannot be fetched for a reason that may pass, or ctx's
// error.
func (b *Bus) WaitRun(ctx context.Context, agent, session, runID string) (*events.Event, error) {
	if err := checkSession(agent, session); err != nil {
		return nil, err
	}
	if err := events.ValidateID("run", runID); err != nil {
		return nil, err
	}
	filters, err := b.filterSubjects(agent, session, []events.Stage{events.StageRunCompleted, events.StageRunFailed})
	if err != nil {
		return nil, err
	}
	var (
		malformed, unfetched int
		found                *events.Event
	)
	err = b.readOrdered(ctx, orderedRead{filters: filters, policy: jetstream.DeliverAllPolicy}, func(m jetstream.Msg, meta *jetstream.MsgMetadata) (bool, error) {
		if e := b.decodeMsg(m, meta, &malformed); e != nil && e.RunID == runID {
			found = e
			return true, b.fill(ctx, e, &unfetched)
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("hookbus: wait for run %s: %w", runID, err)
	}
	return found, nil
}

// compactedFrom returns where a session's rebuild may start: the read_from
// of its last compact.after, or 0 (the beginning).
func (b *Bus) compactedFrom(ctx context.Context, agent, session string) (uint64, error) {
	subject, err := b.subj.Event(agent, session, events.StageCompactAfter)
	if err != nil {
		return 0, err
	}
	m, err := b.lastMsg(ctx, subject, "last compaction of "+agent+"/"+session)
	if m == nil || err != nil {
		return 0, err
	}
	e, err := b.decodeStored(m.Subject, m.Header, m.Data)
	if err != nil {
		return 0, nil // not a compaction we can read: read everything
	}
	var unfetched int
	if err := b.fill(ctx, e, &unfetched); err != nil {
		return 0, err
	}
	if unfetched > 0 {
		return 0, nil
	}
	e.Stored = m.Sequence
	return compactionReadFrom(e), nil
}

// checkSession checks the ids of a session read: its agent and its
// session (events.ValidateID; neither may be empty).
func checkSession(agent, session string) error {
	if err := events.ValidateID("agent", agent); err != nil {
		return err
	}
	return events.ValidateID("session", session)
}
