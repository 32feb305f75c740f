package record

import (
	"cmp"
	"slices"

	"github.com/hookbus/hookbus/events"
)

// Effective returns the events a reader folds, in order: each run's events
// in seq order (after a fault a publish sent again may be stored after
// later events of its run), the runs in the order their first events were
// stored, and without superseded events. A run's second and later
// run.started (an attempt that resumed it) with seq N supersedes every
// event of the run stored before it with seq N or more: those were written
// by an earlier attempt after the resuming attempt read the record, so it
// never saw them (nothing of the earlier attempt can be stored after the
// new claim: appends are fenced). Events already in that order, with no
// superseded event (the rule), are returned as they are.
func Effective(evs []*events.Event) []*events.Event {
	superseded := events.Superseded(evs)
	last := map[string]uint64{}
	ordered := len(superseded) == 0
	for _, e := range evs {
		if !ordered {
			break
		}
		if e.Seq < last[e.RunID] {
			ordered = false
		}
		last[e.RunID] = e.Seq
	}
	if ordered {
		return evs
	}
	first := map[string]int{}
	out := make([]*events.Event, 0, len(evs))
	for i, e := range evs {
		if superseded[i] {
			continue
		}
		if _, ok := first[e.RunID]; !ok {
			first[e.RunID] = i
		}
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b *events.Event) int {
		return cmp.Or(cmp.Compare(first[a.RunID], first[b.RunID]), cmp.Compare(a.Seq, b.Seq))
	})
	return out
}
