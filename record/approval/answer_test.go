package approval_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/record"
	"github.com/hookbus/hookbus/record/approval"
)

// waiting records a run whose step's call c1 waits for a human, as an
// engine's attempt leaves it, and returns the chain after its last event.
func waiting(t *testing.T, j *looptest.Journal) record.Chain {
	t.Helper()
	call := events.ToolCall{ID: "c1", Name: "Bash", Arguments: []byte(`{"command":"ls"}`)}
	var (
		chain record.Chain
		seen  uint64
	)
	for _, s := range []struct {
		stage events.Stage
		step  int
		p     any
	}{
		{events.StageRunStarted, 0, events.RunStarted{Prompt: "tidy"}},
		{events.StageModelResponded, 1, events.ModelResponded{Message: events.Message{Role: events.RoleAssistant, ToolCalls: []events.ToolCall{call}}}},
		{events.StageToolBefore, 1, events.ToolBefore{Call: call}},
		{events.StageApprovalRequested, 1, events.ApprovalRequested{Call: call}},
	} {
		e, err := events.New(s.stage, events.Meta{Source: "test", AgentID: "a", SessionID: "s", RunID: "r1", Step: s.step}, s.p)
		if err != nil {
			t.Fatal(err)
		}
		chain = chain.Next(e)
		if seen, err = j.AppendAfter(context.Background(), e, seen); err != nil {
			t.Fatal(err)
		}
	}
	return chain
}

// An answer is the run's next event, chained after its last; a second
// answer to the call is refused naming the first, and nothing more is
// recorded.
func TestAnswerChainsAndFirstWins(t *testing.T) {
	j := looptest.New()
	before := waiting(t, j)
	deps := approval.Deps{History: j, Recorder: j}
	req := approval.Request{AgentID: "a", SessionID: "s", RunID: "r1", Action: events.ActionApprove,
		By: events.Actor{Identity: "alice", Writer: "alice"}}
	res, err := approval.Answer(context.Background(), deps, req)
	if err != nil || len(res.Resolved) != 1 || res.Resolved[0].CallID != "c1" || len(res.Waiting) != 0 {
		t.Fatalf("answer: %+v, %v", res, err)
	}
	evs := j.Events()
	last := evs[len(evs)-1]
	if last.Stage != events.StageApprovalResolved || last.Seq != before.Seq+1 || last.PrevHash != before.Hash || last.Step != 1 || last.Writer != "alice" {
		t.Fatalf("answer recorded as %s seq %d prev %q step %d writer %q; want seq %d prev %q step 1 writer alice",
			last.Stage, last.Seq, last.PrevHash, last.Step, last.Writer, before.Seq+1, before.Hash)
	}
	req.By.Identity, req.Action, req.Reason = "bob", events.ActionReject, "no"
	_, err = approval.Answer(context.Background(), deps, req)
	var first *approval.AnsweredError
	if !errors.Is(err, approval.ErrBadAnswer) || !errors.As(err, &first) || first.First.By != "alice" {
		t.Fatalf("second answer: %v, want an AnsweredError naming alice's", err)
	}
	if n := len(j.Events()); n != len(evs) {
		t.Fatalf("a refused answer recorded %d events", n-len(evs))
	}
}

// A call without an expiry is left waiting with no wake-up, and a run
// with no events has nothing to expire.
func TestExpireWithoutExpiries(t *testing.T) {
	j := looptest.New()
	waiting(t, j)
	n, next, err := approval.Expire(context.Background(), approval.Deps{History: j, Recorder: j}, "a", "s", "r1")
	if err != nil || n != 0 || !next.IsZero() {
		t.Fatalf("expire of a call with no expiry: %d, %v, %v", n, next, err)
	}
	if _, _, err := approval.Expire(context.Background(), approval.Deps{History: j, Recorder: j}, "a", "s", "nope"); !errors.Is(err, approval.ErrBadAnswer) {
		t.Fatalf("expire of a run with no events: %v, want ErrBadAnswer", err)
	}
}
