package audit

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hookbus/hookbus/events"
)

// Show folds events into the tree of one run, named by its id or a prefix
// of it (as observer show and replay --run take it). Feed it events in
// stream order; it holds the events of the runs whose id starts with the
// prefix and of the sub-agent runs they called (a child's events come
// after its parent's subagent.before, so one pass finds them), and
// nothing else. Then Runs says which runs the prefix matched and Tree
// builds one.
type Show struct {
	prefix  string
	events  map[string][]*events.Event
	matched []string // runs whose id starts with prefix, in the order read
}

// NewShow returns a fold for the run whose id is run, or starts with it.
func NewShow(run string) *Show {
	return &Show{prefix: run, events: map[string][]*events.Event{}}
}

// Add folds one event.
func (s *Show) Add(e *events.Event) {
	if _, ok := s.events[e.RunID]; ok {
		s.events[e.RunID] = append(s.events[e.RunID], e)
		return
	}
	if strings.HasPrefix(e.RunID, s.prefix) {
		s.matched = append(s.matched, e.RunID)
		s.events[e.RunID] = []*events.Event{e}
		return
	}
	if e.ParentRunID != "" {
		if _, ok := s.events[e.ParentRunID]; ok {
			s.events[e.RunID] = []*events.Event{e}
		}
	}
}

// Runs returns the ids of the runs read whose id starts with the prefix,
// in the order their first event was read.
func (s *Show) Runs() []string { return slices.Clone(s.matched) }

// Events returns the events held of run and of the runs it called,
// transitively, in the order they were read. It is nil for a run not held.
func (s *Show) Events(runID string) []*events.Event {
	var out []*events.Event
	for _, id := range s.family(runID) {
		out = append(out, s.events[id]...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Stored < out[j].Stored })
	return out
}

// family is run and its descendants held.
func (s *Show) family(runID string) []string {
	if _, ok := s.events[runID]; !ok {
		return nil
	}
	out := []string{runID}
	for i := 0; i < len(out); i++ {
		for id, evs := range s.events {
			if len(evs) > 0 && evs[0].ParentRunID == out[i] && !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	return out
}

// Tree builds the tree of run, one of the runs held (an id Runs returns,
// or a run it called). It returns an error wrapping ErrNoRun for a run
// whose events it does not hold.
func (s *Show) Tree(runID string) (*RunTree, error) {
	if _, ok := s.events[runID]; !ok {
		return nil, fmt.Errorf("%w: no event of run %q was read", ErrNoRun, runID)
	}
	return BuildTree(runID, s.Events(runID)), nil
}

// BuildTree builds the tree of run from evs: its events and its
// descendants' (other events are left out), in any order (each run's are
// ordered by ce-seq).
func BuildTree(runID string, evs []*events.Event) *RunTree {
	byRun := map[string][]*events.Event{}
	for _, e := range evs {
		byRun[e.RunID] = append(byRun[e.RunID], e)
	}
	return buildFamily(runID, byRun, map[string]bool{})
}

func buildFamily(runID string, byRun map[string][]*events.Event, done map[string]bool) *RunTree {
	done[runID] = true
	evs := slices.Clone(byRun[runID])
	slices.SortStableFunc(evs, func(a, b *events.Event) int {
		return cmp.Or(cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.Stored, b.Stored))
	})
	t, subagents := buildRun(evs)
	for childID, item := range subagents {
		if _, ok := byRun[childID]; ok && !done[childID] {
			item.Child = buildFamily(childID, byRun, done)
		}
	}
	// Children whose subagent.before is not recorded.
	var rest []string
	for id, es := range byRun {
		if !done[id] && len(es) > 0 && es[0].ParentRunID == runID {
			rest = append(rest, id)
		}
	}
	slices.Sort(rest)
	for _, id := range rest {
		if !done[id] {
			t.Children = append(t.Children, buildFamily(id, byRun, done))
		}
	}
	return t
}
