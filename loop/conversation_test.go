package loop_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
)

// historyFunc is a History of one function.
type historyFunc func(ctx context.Context, agent, session string) ([]*events.Event, error)

func (f historyFunc) SessionEvents(ctx context.Context, agent, session string) ([]*events.Event, error) {
	return f(ctx, agent, session)
}

// RunEvents reads the session's events that belong to run.
func (f historyFunc) RunEvents(ctx context.Context, agent, session, run string) ([]*events.Event, error) {
	evs, err := f(ctx, agent, session)
	var own []*events.Event
	for _, e := range evs {
		if e.RunID == run {
			own = append(own, e)
		}
	}
	return own, err
}

// A session's conversation is its History's events as RebuildSession
// folds them; History's error is returned as it is.
func TestConversations(t *testing.T) {
	evs := []*events.Event{
		rawEvent(t, events.StageRunStarted, "a", "s", "r1", 1, `{"prompt":"hello"}`),
		rawEvent(t, events.StageModelResponded, "a", "s", "r1", 2, `{"message":{"role":"assistant","content":"hi there"}}`),
	}
	var asked []string
	c := loop.Conversations{History: historyFunc(func(_ context.Context, agent, session string) ([]*events.Event, error) {
		asked = append(asked, agent+"/"+session)
		return evs, nil
	})}
	got, err := c.Conversation(context.Background(), "a", "s")
	if err != nil {
		t.Fatal(err)
	}
	want, err := loop.RebuildSession(evs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(asked, []string{"a/s"}) || len(got) != 2 || !slices.EqualFunc(got, want.Messages, func(x, y events.Message) bool {
		return x.Role == y.Role && x.Content == y.Content
	}) {
		t.Fatalf("asked %v, conversation %+v, want %+v", asked, got, want.Messages)
	}
	down := errors.New("store away")
	c.History = historyFunc(func(context.Context, string, string) ([]*events.Event, error) { return nil, down })
	if _, err := c.Conversation(context.Background(), "a", "s"); !errors.Is(err, down) {
		t.Fatalf("err %v, want History's", err)
	}
}
