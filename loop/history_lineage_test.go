package loop_test

import (
	"fmt"
	"slices"

	"github.com/hookbus/hookbus/events"
)

// The sessions a recorded history holds: its own, and its sub-agents'.
// The replay rebuilds each from its own events; sessions never mix.

// historyLineage is how the sessions of a history hang together: the
// history's session, and its sub-agents' sessions, each called by a run of
// the history.
type historyLineage struct {
	// children are the sub-agents' sessions, in the order they started.
	children []childRef
	// parent is the run that called each sub-agent run (absent for the
	// history's own runs).
	parent map[string]string
}

type childRef struct{ agent, session, parentRun string }

// lineage checks that every event of evs is of the history's session
// (agent/session, whose events name no parent run) or of a sub-agent's
// session whose events name a run of the history as their parent, each
// run in one session: sessions never mix. It returns an error wrapping
// errBadHistory naming the first event that breaks this.
func lineage(name, agent, session string, evs []*events.Event) (*historyLineage, error) {
	if len(evs) == 0 {
		return nil, fmt.Errorf("%w: history %s holds no events", errBadHistory, name)
	}
	bad := func(e *events.Event, format string, args ...any) error {
		return fmt.Errorf("%w: history %s: event %s (%s, run %s of %s/%s): %s", errBadHistory, name, e.ID, e.Stage, e.RunID, e.AgentID, e.SessionID, fmt.Sprintf(format, args...))
	}
	if e := evs[0]; e.AgentID != agent || e.SessionID != session {
		return nil, bad(e, "a history starts with an event of its session %s/%s", agent, session)
	}
	sessionOf := map[string]string{} // run id -> agent/session
	l := &historyLineage{parent: map[string]string{}}
	for _, e := range evs {
		key := e.AgentID + "/" + e.SessionID
		if s, ok := sessionOf[e.RunID]; ok && s != key {
			return nil, bad(e, "its run has events of session %s too", s)
		}
		sessionOf[e.RunID] = key
		own := e.AgentID == agent && e.SessionID == session
		switch {
		case own && e.ParentRunID != "":
			return nil, bad(e, "the history's session names a parent run (%s)", e.ParentRunID)
		case own:
			continue
		case e.ParentRunID == "":
			return nil, bad(e, "of another session, and of no sub-agent of the history (no parent run)")
		case sessionOf[e.ParentRunID] != e.ParentAgentID+"/"+e.ParentSessionID:
			return nil, bad(e, "its parent run %s of %s/%s is no run of the history stored before it", e.ParentRunID, e.ParentAgentID, e.ParentSessionID)
		}
		if p, ok := l.parent[e.RunID]; ok && p != e.ParentRunID {
			return nil, bad(e, "its run's events name two parents, %s and %s", p, e.ParentRunID)
		}
		l.parent[e.RunID] = e.ParentRunID
		if !slices.ContainsFunc(l.children, func(c childRef) bool { return c.agent == e.AgentID && c.session == e.SessionID }) {
			l.children = append(l.children, childRef{agent: e.AgentID, session: e.SessionID, parentRun: e.ParentRunID})
		}
	}
	return l, nil
}

// descends reports whether run was called, directly or not, by ancestor.
func (l *historyLineage) descends(run, ancestor string) bool {
	for p := l.parent[run]; p != ""; p = l.parent[p] {
		if p == ancestor {
			return true
		}
	}
	return false
}
