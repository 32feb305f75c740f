package record

import (
	"cmp"
	"context"
	"slices"

	"github.com/hookbus/hookbus/events"
)

// History reads a session's events back, in stream order, each with its
// stream sequence (events.Event.Stored). *bus.Bus implements it.
type History interface {
	// SessionEvents returns the events of a session a run is read from:
	// every event, or, once the session was compacted, those from its last
	// compaction on.
	SessionEvents(ctx context.Context, agent, session string) ([]*events.Event, error)
	// RunEvents returns every event of one run of a session, compaction or
	// not, in stream order: a run that SessionEvents left out (all or part
	// of it before a compaction) is read this way.
	RunEvents(ctx context.Context, agent, session, run string) ([]*events.Event, error)
}

// ReadRun reads the session of run as its writers read it: the session's
// events (History.SessionEvents: from its last compaction on) and, when the
// session was compacted and that read does not hold the run's first event,
// the run's own events from its whole record (History.RunEvents), merged in
// stream order. A run older than the compaction (cut off, waiting for a
// human, or ended and delivered again) would otherwise look new.
func ReadRun(ctx context.Context, h History, agent, session, run string) ([]*events.Event, error) {
	evs, err := h.SessionEvents(ctx, agent, session)
	if err != nil {
		return nil, err
	}
	compacted, first := false, uint64(0)
	for _, e := range evs {
		if e.Stage == events.StageCompactAfter {
			compacted = true
		}
		if e.RunID == run && e.Seq != 0 && (first == 0 || e.Seq < first) {
			first = e.Seq
		}
	}
	if !compacted || first == 1 {
		return evs, nil
	}
	own, err := h.RunEvents(ctx, agent, session, run)
	if err != nil || len(own) == 0 {
		return evs, err
	}
	out := slices.Concat(own, evs)
	slices.SortStableFunc(out, func(a, b *events.Event) int { return cmp.Compare(a.Stored, b.Stored) })
	return slices.CompactFunc(out, func(a, b *events.Event) bool { return a.Stored == b.Stored && a.ID == b.ID }), nil
}

// Truncated cuts run's events (in seq order, as Effective gives them) at
// their first hole: an event whose seq is not the one after its
// predecessor's, and every later one of the run. Appends are asynchronous
// between write-ahead points, so after a fault (a cluster's leader killed)
// an event may be lost while a later one of the same attempt is stored; the
// attempt then stops unrecorded at its next flush, and the attempt that
// resumes the run reads it up to the hole: its run.started takes the
// missing seq and so supersedes what was stored after it
// (events.Superseded). Only write-ahead events (tool.before, tool.result)
// say a tool ran, and nothing is written ahead past a hole: the flush
// before it fails. A run's events start at the first seq read (a read
// bounded by a compaction starts mid-run); events without a seq (shadow
// records) and other runs' events are kept as they are: only run is cut,
// and only when it has no end.
func Truncated(evs []*events.Event, run string) []*events.Event {
	var (
		next uint64 // the seq the run's next event must have; 0: none seen yet
		cut  = -1   // the index of the first event cut
	)
	for i, e := range evs {
		if e.RunID != run || e.Seq == 0 {
			continue
		}
		if next != 0 && e.Seq != next && cut < 0 {
			cut = i
		}
		if e.Stage.Terminal() {
			return evs // ended: its end is written after a flush of all before it
		}
		next = e.Seq + 1
	}
	if cut < 0 {
		return evs
	}
	out := append(make([]*events.Event, 0, len(evs)), evs[:cut]...)
	for _, e := range evs[cut:] {
		if e.RunID != run || e.Seq == 0 {
			out = append(out, e)
		}
	}
	return out
}
