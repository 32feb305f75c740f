package loop_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
)

// behind is a History served by a replica that has not yet stored anything
// from stream sequence upTo on: every read ends before it.
type behind struct {
	*looptest.Journal
	upTo uint64
}

func (b behind) cut(evs []*events.Event) []*events.Event {
	var out []*events.Event
	for _, e := range evs {
		if e.Stored < b.upTo {
			out = append(out, e)
		}
	}
	return out
}

func (b behind) SessionEvents(ctx context.Context, agent, session string) ([]*events.Event, error) {
	evs, err := b.Journal.SessionEvents(ctx, agent, session)
	return b.cut(evs), err
}

func (b behind) RunEvents(ctx context.Context, agent, session, run string) ([]*events.Event, error) {
	evs, err := b.Journal.RunEvents(ctx, agent, session, run)
	return b.cut(evs), err
}

// An answer is never lost to a read served by a replica behind the
// stream: the resumer asks for the answer again rather than take the run
// for still waiting, and the resumption it queues names the answer's
// stream sequence, so an attempt whose read does not hold it hands the
// request back instead of ending waiting. Once a read holds the answer,
// the run resumes and ends.
func TestAnAnswerIsNotLostToAStaleRead(t *testing.T) {
	j := looptest.New()
	calc := &countingTool{name: "calculator", answer: "42"}
	tools := []loop.Tool{&countingTool{name: "clock", answer: "noon"}, calc}
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
	if res, err := newEngine(t, j, loop.Config{Hooks: asker(t), Tools: tools}).Run(ctxT(t), req); err != nil || res.Reason != loop.ReasonWaiting {
		t.Fatalf("first attempt: %+v, %v", res, err)
	}
	if _, err := answerAs(t, j, req, "call_1_2", events.ActionApprove, "alice", ""); err != nil {
		t.Fatal(err)
	}
	var answer *events.Event
	for _, e := range j.Events() {
		if e.Stage == events.StageApprovalResolved {
			answer = e
		}
	}
	if answer == nil || answer.Stored == 0 {
		t.Fatalf("no stored answer in %v", stagesOf(j.Events()))
	}
	stale := behind{j, answer.Stored}

	q := &queue{}
	err := (&loop.Resumer{History: stale, Recorder: j, Queue: q}).Resolved(ctxT(t), answer)
	if !errors.Is(err, loop.ErrStaleRead) || q.resumes.Load() != 0 {
		t.Fatalf("resumer on a read without its answer: %v, %d resumptions; want ErrStaleRead and none", err, q.resumes.Load())
	}
	if err := (&loop.Resumer{History: j, Recorder: j, Queue: q}).Resolved(ctxT(t), answer); err != nil || q.resumes.Load() != 1 {
		t.Fatalf("resumer: %v, %d resumptions; want one", err, q.resumes.Load())
	}
	if q.last.ResumeAfter != answer.Stored {
		t.Fatalf("the resumption names stream sequence %d, want the answer's %d", q.last.ResumeAfter, answer.Stored)
	}

	n := len(j.Events())
	res, err := newEngine(t, j, loop.Config{History: stale, Tools: tools}).Run(ctxT(t), q.last)
	if !errors.Is(err, loop.ErrStaleRead) || !errors.Is(err, loop.ErrUnrecorded) || res != nil {
		t.Fatalf("attempt on a read without the answer: %+v, %v; want ErrStaleRead (handed back)", res, err)
	}
	if len(j.Events()) != n || calc.calls.Load() != 0 {
		t.Fatalf("the stale attempt recorded %d events and ran the calculator %d times; want nothing", len(j.Events())-n, calc.calls.Load())
	}
	res, err = newEngine(t, j, loop.Config{Tools: tools}).Run(ctxT(t), q.last)
	if err != nil || res.Reason != events.ReasonDone || !res.Ended || calc.calls.Load() != 1 {
		t.Fatalf("resumed: %+v, %v, calculator ran %d; want done, once", res, err, calc.calls.Load())
	}
}
