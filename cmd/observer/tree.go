package main

import "github.com/hookbus/hookbus/events"

// treeFilter passes on the events of run root and of the sub-agent runs it
// called (transitively), with their depth under root. Events come in
// stream order, and a child's events come after the parent's
// subagent.before that named it, so one pass finds them all.
func treeFilter(root string, fn func(e *events.Event, depth int) error) func(*events.Event) error {
	depth := map[string]int{root: 0}
	return func(e *events.Event) error {
		d, ok := depth[e.RunID]
		if !ok {
			pd, parentIn := depth[e.ParentRunID]
			if e.ParentRunID == "" || !parentIn {
				return nil
			}
			d = pd + 1
			depth[e.RunID] = d
		}
		return fn(e, d)
	}
}
