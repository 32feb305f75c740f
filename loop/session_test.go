package loop_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
)

func rawEvent(t *testing.T, stage events.Stage, agent, session, run string, seq uint64, data string) *events.Event {
	t.Helper()
	e, err := events.New(stage, events.Meta{Source: "https://example.com/other", AgentID: agent, SessionID: session, RunID: run, Seq: seq},
		json.RawMessage(data))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Events whose data is valid JSON but not their stage's payload (another
// producer's, or damaged) are left out of the conversation and listed.
func TestRebuildSessionSkipsEventsItCannotDecode(t *testing.T) {
	bad := []*events.Event{
		rawEvent(t, events.StageRunStarted, "a", "s", "x", 1, `{"prompt":5}`),
		rawEvent(t, events.StageModelResponded, "a", "s", "x", 2, `{"message":"hi"}`),
		rawEvent(t, events.StageToolAfter, "a", "s", "x", 3, `{"call":[]}`),
		rawEvent(t, events.StageStop, "a", "s", "x", 4, `{"continue":true}`),
	}
	evs := []*events.Event{
		rawEvent(t, events.StageRunStarted, "a", "s", "r1", 2, `{"prompt":"hello"}`),
		bad[0], bad[1],
		rawEvent(t, events.StageModelResponded, "a", "s", "r1", 5, `{"message":{"role":"assistant","content":"hi there"}}`),
		bad[2], bad[3],
	}
	s, err := loop.RebuildSession(evs)
	if err != nil {
		t.Fatalf("RebuildSession: %v", err)
	}
	if len(s.Messages) != 2 || s.Messages[0].Content != "hello" || s.Messages[1].Content != "hi there" {
		t.Fatalf("messages %+v", s.Messages)
	}
	if len(s.Skipped) != len(bad) {
		t.Fatalf("skipped %v, want %d", s.Skipped, len(bad))
	}
	for i, err := range s.Skipped {
		if !errors.Is(err, loop.ErrCorruptSession) || !strings.Contains(err.Error(), bad[i].ID) {
			t.Errorf("skipped[%d] = %v, want ErrCorruptSession naming %s", i, err, bad[i].ID)
		}
	}
}

// A foreign event with an undecodable payload in a session does not stop
// the session's next run; in the run being resumed it is an error (the run
// cannot go on from a record it cannot read).
func TestRunInSessionWithUndecodableForeignEvent(t *testing.T) {
	b := bustest.StartBus(t)
	eng := newEngine(t, b, loop.Config{})
	if _, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "first question"}); err != nil {
		t.Fatal(err)
	}
	foreign := rawEvent(t, events.StageRunStarted, "demo", "s1", "foreign", 1, `{"prompt":5}`)
	if err := b.PublishSync(ctxT(t), foreign); err != nil {
		t.Fatal(err)
	}
	second, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "second question"})
	if err != nil || second.Reason != events.ReasonDone {
		t.Fatalf("second run after a foreign event: %+v, %v", second, err)
	}
	var started events.RunStarted
	for _, e := range runEvents(allEvents(t, b), second.RunID) {
		if e.Stage == events.StageRunStarted {
			if err := e.DecodeData(&started); err != nil {
				t.Fatal(err)
			}
		}
	}
	if started.HistoryMessages != 5 {
		t.Fatalf("second run saw %d history messages, want the first run's 5", started.HistoryMessages)
	}

	// The same bad event under the id of the run asked for: that run's own
	// record is unreadable.
	_, err = eng.Run(ctxT(t), &events.RunRequest{RunID: "foreign", AgentID: "demo", SessionID: "s1", Prompt: "resume"})
	if !errors.Is(err, loop.ErrCorruptSession) || !strings.Contains(err.Error(), foreign.ID) {
		t.Fatalf("resuming a run whose own event does not decode: %v, want ErrCorruptSession naming %s", err, foreign.ID)
	}
}

// A run taken over while its tool ran records the call's outcome when it
// closes, which may be after the run that took the session compacted it.
// Read from the compaction on (as SessionEvents reads a compacted session),
// that result answers a call the read does not hold: the compaction's
// messages stand for the call, and the result is left out, so no tool
// message follows the next run's prompt.
func TestLateResultAfterACompactionIsLeftOut(t *testing.T) {
	evs := []*events.Event{
		rawEvent(t, events.StageRunStarted, "a", "s", "y", 1, `{"prompt":"next"}`),
		rawEvent(t, events.StageCompactAfter, "a", "s", "y", 2, `{"messages":[
			{"role":"user","content":"summary"},
			{"role":"assistant","tool_calls":[{"id":"call_1_1","name":"Bash","arguments":{}}]},
			{"role":"tool","tool_call_id":"call_1_1","name":"Bash","content":"error: no result"},
			{"role":"user","content":"next"}]}`),
		rawEvent(t, events.StageToolAfter, "a", "s", "x", 5, `{"call":{"id":"call_1_1","name":"Bash","arguments":{}},"result":{"content":"error: outcome unknown","is_error":true}}`),
		rawEvent(t, events.StageModelResponded, "a", "s", "y", 3, `{"message":{"role":"assistant","content":"done"}}`),
	}
	s, err := loop.RebuildSession(evs)
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range s.Messages {
		roles = append(roles, string(m.Role)+":"+m.ToolCallID+m.Content)
	}
	want := []string{"user:summary", "assistant:", "tool:call_1_1error: no result", "user:next", "assistant:done"}
	if !slices.Equal(roles, want) {
		t.Fatalf("conversation %q, want %q", roles, want)
	}
}
