package loop

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/hookbus/hookbus/events"
)

// readRun reads the session of run as the loop folds the run from it: the
// session's events (History.SessionEvents: from its last compaction on)
// and, when the session was compacted and that read does not hold the
// run's first event, the run's own events from its whole record
// (History.RunEvents), merged in stream order. A run older than the
// compaction (cut off, waiting for a human, or ended and delivered again)
// would otherwise look new, and run again from its start.
func readRun(ctx context.Context, h History, agent, session, run string) ([]*events.Event, error) {
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

// holds returns nil when evs, a read of a session, holds the event stored
// at stream sequence at (what, e.g. "the answer X", names it), or at is 0;
// otherwise an error wrapping ErrStaleRead: the read came from a replica
// behind the stream, and what it shows is not the record.
func holds(evs []*events.Event, at uint64, what string) error {
	if at == 0 || slices.ContainsFunc(evs, func(e *events.Event) bool { return e.Stored == at }) {
		return nil
	}
	return fmt.Errorf("%w: it does not hold %s (stream sequence %d)", ErrStaleRead, what, at)
}
