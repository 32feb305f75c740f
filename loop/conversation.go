package loop

import (
	"context"

	"github.com/hookbus/hookbus/events"
)

// Conversations reads sessions' conversations from a History as the
// engine rebuilds them (RebuildSession), for those that show a session's
// messages elsewhere: Claude Code's transcripts (package
// hooks/claudecode) read them through it.
type Conversations struct {
	History History
}

// Conversation returns agent's session's messages as they stand in the
// record (Session.Messages). The error is History's, or RebuildSession's.
func (c Conversations) Conversation(ctx context.Context, agent, session string) ([]events.Message, error) {
	evs, err := c.History.SessionEvents(ctx, agent, session)
	if err != nil {
		return nil, err
	}
	s, err := RebuildSession(evs)
	if err != nil {
		return nil, err
	}
	return s.Messages, nil
}
