package loop_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/loop/scripted"
)

// compactScript answers each run in one step, and summarises.
func compactScript() *scripted.Script {
	return &scripted.Script{
		Replies: []scripted.Reply{{Content: "Noted: {{prompt}}"}},
		Summary: "The user said {{messages}} things.",
	}
}

func sessionRuns(t *testing.T, eng *loop.Engine, session string, n int) []*loop.Result {
	t.Helper()
	var out []*loop.Result
	for i := range n {
		res, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: session, Prompt: fmt.Sprintf("fact number %d is worth remembering", i)})
		if err != nil || res.Reason != events.ReasonDone {
			t.Fatalf("run %d: %+v, %v", i, res, err)
		}
		out = append(out, res)
	}
	return out
}

// beforeCompact and afterCompact: a conversation past the agent's context
// budget is summarised before the next model call; the model then sees the
// summary and the latest messages.
func TestCompactionSummarisesTheOlderPart(t *testing.T) {
	j := looptest.New()
	model := &recordingModel{Model: scripted.New(compactScript())}
	eng := newEngine(t, j, loop.Config{Model: model, Compaction: loop.Compaction{MaxTokens: 40, Keep: 2}})
	sessionRuns(t, eng, "s1", 6)
	evs := j.Events()
	before := payloadsOf[events.CompactBefore](t, evs, events.StageCompactBefore)
	after := payloadsOf[events.CompactAfter](t, evs, events.StageCompactAfter)
	if len(before) == 0 || len(before) != len(after) {
		t.Fatalf("%d compact.before, %d compact.after; want some, paired", len(before), len(after))
	}
	if b := before[0]; b.Tokens <= 40 || b.Budget != 40 || b.Manual {
		t.Fatalf("compact.before %+v", b)
	}
	a := after[0]
	if a.MessagesAfter != 3 || a.MessagesBefore != before[0].Messages || !strings.HasPrefix(a.Messages[0].Content, loop.SummaryPrefix+"The user said") ||
		a.ReadFrom == 0 || a.Usage.OutputTokens == 0 {
		t.Fatalf("compact.after %+v", a)
	}
	// The model's next step saw the summary, then the messages kept.
	last := model.seen[len(model.seen)-1]
	if !strings.HasPrefix(last[0].Content, loop.SummaryPrefix) || len(last) > 2+2+1 {
		t.Fatalf("the last step saw %d messages, starting %q", len(last), last[0].Content)
	}
	// A rebuild gives the conversation the live run had.
	sess, err := loop.RebuildSession(evs)
	if err != nil {
		t.Fatal(err)
	}
	live := append(slices.Clone(last), events.Message{Role: events.RoleAssistant, Content: "Noted: fact number 5 is worth remembering"})
	if !sameMessages(sess.Messages, live) {
		t.Fatalf("rebuilt:\n%v\nlive:\n%v", sess.Messages, live)
	}
}

func sameMessages(a, b []events.Message) bool {
	return slices.EqualFunc(a, b, func(x, y events.Message) bool {
		return x.Role == y.Role && x.Content == y.Content && x.ToolCallID == y.ToolCallID && len(x.ToolCalls) == len(y.ToolCalls)
	})
}

// failingSummaries fails every summary request.
type failingSummaries struct{ loop.Model }

func (m failingSummaries) Generate(ctx context.Context, req *loop.ModelRequest) (*loop.ModelResponse, error) {
	if req.Purpose == loop.PurposeCompact {
		return nil, errors.New("summariser broken")
	}
	return m.Model.Generate(ctx, req)
}

// onCompactError: a failed summary is compact.failed; the run goes on
// uncompacted, or fails when its agent says so.
func TestCompactionFailure(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("fail=%t", fail), func(t *testing.T) {
			j := looptest.New()
			eng := newEngine(t, j, loop.Config{Model: failingSummaries{scripted.New(compactScript())}, Compaction: loop.Compaction{MaxTokens: 20, Keep: 1, Fail: fail}})
			var last *loop.Result
			var err error
			for i := 0; i < 3; i++ {
				last, err = eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "a long prompt of many words to pass the budget"})
				if err != nil {
					break
				}
			}
			failed := payloadsOf[events.CompactFailed](t, j.Events(), events.StageCompactFailed)
			if len(failed) == 0 || !strings.Contains(failed[0].Error, "summariser broken") {
				t.Fatalf("compact.failed %+v", failed)
			}
			if countStages(j.Events(), events.StageCompactAfter) != 0 {
				t.Fatal("compact.after after a failed summary")
			}
			if fail && (err == nil || last.Reason != loop.ReasonFailed || !strings.Contains(err.Error(), "compaction")) {
				t.Fatalf("with fail: %+v, %v; want the run failed", last, err)
			}
			if !fail && (err != nil || last.Reason != events.ReasonDone) {
				t.Fatalf("without fail: %+v, %v; want it done", last, err)
			}
		})
	}
}

// loop compact: a run of its own that compacts the session on request.
func TestManualCompaction(t *testing.T) {
	j := looptest.New()
	eng := newEngine(t, j, loop.Config{Model: scripted.New(compactScript())})
	sessionRuns(t, eng, "s1", 4)
	res, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Compact: true})
	if err != nil || res.Reason != events.ReasonDone || res.Detail != "compacted" {
		t.Fatalf("compaction run: %+v, %v", res, err)
	}
	before := payloadsOf[events.CompactBefore](t, j.Events(), events.StageCompactBefore)
	if len(before) != 1 || !before[0].Manual || before[0].Messages != 8 {
		t.Fatalf("compact.before %+v", before)
	}
	evs, _ := j.SessionEvents(ctxT(t), "demo", "s1")
	sess, err := loop.RebuildSession(evs)
	if err != nil || len(sess.Messages) != 1+loop.DefaultCompactKeep || !strings.HasPrefix(sess.Messages[0].Content, loop.SummaryPrefix) {
		t.Fatalf("after loop compact: %v, %v", sess.Messages, err)
	}
	next, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "and now?"})
	if err != nil || next.Reason != events.ReasonDone {
		t.Fatalf("the next run: %+v, %v", next, err)
	}
}

// A 200-run session that compacts rebuilds, from the bus, with the context
// the live run had, reading only the events since its last compaction.
func TestLongSessionRebuildsBoundedFromTheBus(t *testing.T) {
	b := bustest.StartBus(t)
	model := &recordingModel{Model: scripted.New(compactScript())}
	eng := newEngine(t, b, loop.Config{Model: model, Compaction: loop.Compaction{MaxTokens: 60, Keep: 2}})
	const runs = 200
	sessionRuns(t, eng, "long", runs)
	all := allEvents(t, b)
	read, err := b.SessionEvents(ctxT(t), "demo", "long")
	if err != nil {
		t.Fatal(err)
	}
	compactions := countStages(all, events.StageCompactAfter)
	if compactions < runs/10 || len(read) > len(all)/10 {
		t.Fatalf("%d events in all, %d compactions; a rebuild read %d events: want it bounded", len(all), compactions, len(read))
	}
	sess, err := loop.RebuildSession(read)
	if err != nil {
		t.Fatal(err)
	}
	last := model.seen[len(model.seen)-1]
	live := append(slices.Clone(last), events.Message{Role: events.RoleAssistant, Content: fmt.Sprintf("Noted: fact number %d is worth remembering", runs-1)})
	if !sameMessages(sess.Messages, live) {
		t.Fatalf("rebuilt from the bus:\n%v\nlive:\n%v", sess.Messages, live)
	}
	// The whole history rebuilds to the same conversation.
	whole, err := loop.RebuildSession(all)
	if err != nil || !sameMessages(whole.Messages, live) {
		t.Fatalf("rebuilt from every event: %v, %v", whole.Messages, err)
	}
}
