package bridge

import (
	"context"
	"fmt"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/harness"
)

// identify gives a tool call the harness sent without an id (Gemini CLI's
// calls have none) the id it is recorded under, so that a call's
// tool.before and tool.after pair in the record: a new id for a
// tool.before; for a tool.after, the id of the open run's call of the same
// tool and arguments that has no tool.after yet. That is the session's
// last tool.before when the calls run one at a time (two reads, whatever
// the session's length); the session is read whole only when it is not
// (calls run side by side). A tool.after whose call is not found keeps no
// id. m is changed in place.
func (b *Bridge) identify(ctx context.Context, session string, st *state, m *harness.Mapped) error {
	switch p := m.Payload.(type) {
	case events.ToolBefore:
		if p.Call.ID == "" {
			p.Call.ID = events.NewID()
			m.Payload = p
		}
	case events.ToolAfter:
		if p.Call.ID != "" || !st.open() {
			return nil
		}
		id, err := b.openCall(ctx, session, st, p.Call)
		if err != nil {
			return err
		}
		p.Call.ID, p.Result.CallID = id, id
		m.Payload = p
	}
	return nil
}

// openCall returns the id of the open run's latest call of call's tool and
// arguments that has no tool.after; "" when there is none.
func (b *Bridge) openCall(ctx context.Context, session string, st *state, call events.ToolCall) (string, error) {
	before, err := b.cfg.Store.LastEvent(ctx, b.cfg.Agent, session, events.StageToolBefore)
	if err != nil {
		return "", fmt.Errorf("read session: %w", err)
	}
	if before == nil || before.RunID != st.run {
		return "", nil
	}
	if p, err := events.Data[events.ToolBefore](before); err == nil && p.Call.Name == call.Name && sameJSON(p.Call.Arguments, call.Arguments) {
		after, err := b.cfg.Store.LastEvent(ctx, b.cfg.Agent, session, events.StageToolAfter)
		if err != nil {
			return "", fmt.Errorf("read session: %w", err)
		}
		var a events.ToolAfter
		if after != nil {
			a, _ = events.Data[events.ToolAfter](after)
		}
		if after == nil || a.Call.ID != p.Call.ID {
			return p.Call.ID, nil
		}
	}
	evs, err := b.cfg.Store.SessionEvents(ctx, b.cfg.Agent, session)
	if err != nil {
		return "", fmt.Errorf("read session: %w", err)
	}
	return latestCall(evs, st.run, call, sameJSON, events.StageToolAfter), nil
}
