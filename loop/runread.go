package loop

import (
	"context"
	"fmt"
	"slices"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/record"
)

// readRun reads the session of run as the loop folds the run from it
// (record.ReadRun): a run older than the session's compaction would
// otherwise look new, and run again from its start. An error wraps
// ErrUnrecorded.
func readRun(ctx context.Context, h History, agent, session, run string) ([]*events.Event, error) {
	evs, err := record.ReadRun(ctx, h, agent, session, run)
	if err != nil {
		return nil, fmt.Errorf("%w: read session %s/%s: %w", ErrUnrecorded, agent, session, err)
	}
	return evs, nil
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
