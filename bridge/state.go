package bridge

import "github.com/hookbus/hookbus/events"

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
	// seqs is the largest seq of each run of the session, and lasts the
	// event that has it (whose chain hash the run's next event names as
	// ce-prevhash).
	seqs  map[string]uint64
	lasts map[string]*events.Event
	// stored maps the ids of the session's events to their stream
	// sequences.
	stored map[string]uint64
}

// fold reads a session's events (in stream order, as loop.History gives
// them).
func fold(evs []*events.Event) *state {
	st := &state{seqs: map[string]uint64{}, lasts: map[string]*events.Event{}, stored: make(map[string]uint64, len(evs))}
	for _, e := range evs {
		st.add(e, e.Stored)
	}
	return st
}

// add takes e, stored at stream sequence stored, into the state.
func (st *state) add(e *events.Event, stored uint64) {
	st.stored[e.ID] = stored
	if stored > st.last {
		st.last = stored
	}
	if e.Seq > st.seqs[e.RunID] {
		st.seqs[e.RunID], st.lasts[e.RunID] = e.Seq, e
	}
	if e.RunID != st.run {
		st.run, st.started, st.intake, st.ended = e.RunID, false, false, false
	}
	switch e.Stage {
	case events.StageRunStarted:
		st.started = true
	case events.StageIntake:
		st.intake = true
	case events.StageRunCompleted, events.StageRunFailed:
		st.ended = true
	}
}

// open reports whether the session has a run that has not ended.
func (st *state) open() bool { return st.run != "" && !st.ended }

// lastHash is the chain hash of run's last event, "" when it has none.
func (st *state) lastHash(run string) string {
	if e := st.lasts[run]; e != nil {
		return e.ChainHash()
	}
	return ""
}
