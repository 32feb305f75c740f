package bridge

import (
	"context"
	"errors"
	"fmt"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/record"
)

// state is what a bridge needs to know of a session to append to it:
// where it ends, which run is current and how far its seq has gone.
type state struct {
	// last is the stream sequence of the session's last event (0: none).
	last uint64
	// run is the current run: the run of the session's last event.
	run string
	// started, intake and ended say whether the current run has a
	// run.started, an intake, and an end (run.completed or run.failed).
	started, intake, ended bool
	// intakeKnown says whether intake was looked for (read looks only for
	// a prompt).
	intakeKnown bool
	// heads is where each run known stands for its next event.
	heads record.Heads
	// chains is where runs stand whose last event is not at hand (a state
	// a Cache remembered); an event added later to such a run takes over.
	chains map[string]record.Chain
}

// chain returns where run stands for its next event.
func (st *state) chain(run string) record.Chain {
	if c, ok := st.chains[run]; ok {
		return c
	}
	return st.heads.Chain(run)
}

// fold reads a session's events (in stream order, as loop.History gives
// them).
func fold(evs []*events.Event) *state {
	st := &state{}
	for _, e := range evs {
		st.add(e, e.Stored)
	}
	return st
}

// add takes e, stored at stream sequence stored, into the state.
func (st *state) add(e *events.Event, stored uint64) {
	st.last = max(st.last, stored)
	st.heads.Add(e)
	if c, ok := st.chains[e.RunID]; ok && e.Seq > c.Seq {
		delete(st.chains, e.RunID)
	}
	if e.RunID != st.run {
		// A run seen from its first event: whether it has an intake is known.
		st.run, st.started, st.intake, st.ended, st.intakeKnown = e.RunID, false, false, false, true
	}
	switch e.Stage {
	case events.StageRunStarted:
		st.started = true
	case events.StageIntake:
		st.intake = true
	case events.StageRunCompleted, events.StageRunFailed:
		st.ended = true
	case events.StageHarnessEvent:
		if afterEnd(e) {
			st.ended = true
		}
	}
}

// afterEnd reports whether e is a harness.event recorded after its run's
// end (the harness's session ended after its last turn).
func afterEnd(e *events.Event) bool {
	var p events.HarnessEvent
	return e.DecodeData(&p) == nil && p.AfterEnd
}

// open reports whether the session has a run that has not ended.
func (st *state) open() bool { return st.run != "" && !st.ended }

// read returns the session's state. It reads the session's last event
// (one request, whatever the session's length) and, when that does not
// settle whether its run has a run.started (the last event is an intake or
// an interceptor's record: the bridge writes those before a run's
// run.started) or (needIntake: a prompt) an intake, the session's last
// event of that stage; it reads the whole session only when the last event
// does not say where the session stands (an event outside a run's
// sequence, a message that is not an event).
func (b *Bridge) read(ctx context.Context, session string, needIntake bool) (*state, error) {
	head, err := b.cfg.Store.LastEvent(ctx, b.cfg.Agent, session, "")
	if errors.Is(err, events.ErrMalformedEvent) {
		return b.readAll(ctx, session)
	}
	if err != nil {
		return nil, fmt.Errorf("read session: %w", err)
	}
	st := &state{}
	if head == nil {
		return st, nil
	}
	if head.Seq == 0 {
		return b.readAll(ctx, session)
	}
	st.add(head, head.Stored)
	st.intakeKnown = needIntake || !st.open() || head.Stage == events.StageIntake
	if !st.open() {
		return st, nil
	}
	switch head.Stage {
	case events.StageIntake, events.StageHookDecided, events.StageHookFailed:
		// The head of a run the bridge opened with a prompt, or of one
		// whose events were not all stored: it may lack its run.started.
		if st.started, err = b.inRun(ctx, session, events.StageRunStarted, head.RunID); err != nil {
			return nil, err
		}
	default:
		// Every other event comes after its run's run.started: the
		// bridge opens each run with one, and an intake's run gets its
		// run.started right after the intake.
		st.started = true
	}
	if needIntake && !st.intake {
		if st.intake, err = b.inRun(ctx, session, events.StageIntake, head.RunID); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// inRun reports whether the session's last event of stage is run's.
func (b *Bridge) inRun(ctx context.Context, session string, stage events.Stage, run string) (bool, error) {
	e, err := b.cfg.Store.LastEvent(ctx, b.cfg.Agent, session, stage)
	if errors.Is(err, events.ErrMalformedEvent) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read session: %w", err)
	}
	return e != nil && e.RunID == run, nil
}

// readAll folds the whole session.
func (b *Bridge) readAll(ctx context.Context, session string) (*state, error) {
	evs, err := b.cfg.Store.SessionEvents(ctx, b.cfg.Agent, session)
	if err != nil {
		return nil, fmt.Errorf("read session: %w", err)
	}
	return fold(evs), nil
}

// reread reads the session again after another writer appended first,
// for the plan p of which some events may be stored: from its last event
// when that is in the run p's stored events are in (or none is stored),
// otherwise whole.
func (b *Bridge) reread(ctx context.Context, p *plan) (*state, error) {
	st, err := b.read(ctx, p.main.SessionID, p.stage == events.StageIntake)
	if err != nil {
		return nil, err
	}
	for _, run := range p.stored {
		if run != st.run {
			return b.readAll(ctx, p.main.SessionID)
		}
	}
	return st, nil
}
