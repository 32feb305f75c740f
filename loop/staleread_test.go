package loop_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/record/approval"
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

// staleOnce is a History whose first session read is served by a replica
// behind the stream (it ends before stream sequence upTo); later reads are
// whole.
type staleOnce struct {
	*looptest.Journal
	upTo  uint64
	reads atomic.Int32
}

func (s *staleOnce) SessionEvents(ctx context.Context, agent, session string) ([]*events.Event, error) {
	evs, err := s.Journal.SessionEvents(ctx, agent, session)
	if s.reads.Add(1) == 1 {
		return behind{s.Journal, s.upTo}.cut(evs), err
	}
	return evs, err
}

// admitting is a record whose reclaims are admitted although the session
// changed since the attempt read it, as a JetStream leader that lost its
// in-flight conditions in a leader change can admit two conditional writes.
type admitting struct{ *looptest.Journal }

func (a admitting) Reclaim(ctx context.Context, e *events.Event, last, _ uint64) (uint64, error) {
	return a.Journal.Reclaim(ctx, e, last, lastStored(a.Journal, e))
}

// lastStored is the stream sequence of the last event stored on e's
// session.
func lastStored(j *looptest.Journal, e *events.Event) uint64 {
	var now uint64
	for _, s := range j.Events() {
		if s.AgentID == e.AgentID && s.SessionID == e.SessionID {
			now = s.Stored
		}
	}
	return now
}

// An attempt whose claim was admitted after the run ended (its first read
// missed the end) ends nothing again: the read after its claim shows the
// end, and the attempt returns the recorded result, appending nothing more.
func TestAClaimAdmittedAfterTheEndEndsNothing(t *testing.T) {
	j := looptest.New()
	tools := []loop.Tool{&countingTool{name: "clock", answer: "noon"}, &countingTool{name: "calculator", answer: "42"}}
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
	if res, err := newEngine(t, j, loop.Config{Hooks: asker(t), Tools: tools}).Run(ctxT(t), req); err != nil || res.Reason != loop.ReasonWaiting {
		t.Fatalf("first attempt: %+v, %v", res, err)
	}
	n := len(j.Events())
	if _, err := answerAs(t, j, req, "call_1_2", events.ActionApprove, "alice", ""); err != nil {
		t.Fatal(err)
	}
	res, q, err := resumeFromRecord(t, j, newEngine(t, j, loop.Config{Tools: tools}), n)
	if err != nil || res == nil || res.Reason != events.ReasonDone {
		t.Fatalf("resumed: %+v, %v", res, err)
	}
	var end *events.Event
	for _, e := range j.Events() {
		if e.Stage == events.StageRunCompleted {
			end = e
		}
	}
	before := len(j.Events())
	late := newEngine(t, admitting{j}, loop.Config{History: &staleOnce{Journal: j, upTo: end.Stored}, Tools: tools})
	again, err := late.Run(ctxT(t), q.last)
	if err != nil || again == nil || again.Reason != events.ReasonDone || !again.Ended {
		t.Fatalf("late attempt: %+v, %v; want the recorded end", again, err)
	}
	var ends, claims int
	for _, e := range j.Events()[before:] {
		switch e.Stage {
		case events.StageRunStarted:
			claims++
		case events.StageRunCompleted, events.StageRunFailed:
			ends++
		}
	}
	if claims != 1 || ends != 0 || len(j.Events()) != before+1 {
		t.Fatalf("the late attempt stored %v; want its claim only", stagesOf(j.Events()[before:]))
	}
}

// admittingAfter is a record whose appends after a read are admitted
// although the session changed since, as a JetStream leader change can.
type admittingAfter struct{ *looptest.Journal }

func (a admittingAfter) AppendAfterAs(ctx context.Context, e *events.Event, _ uint64, writer string) (uint64, error) {
	return a.Journal.AppendAfterAs(ctx, e, lastStored(a.Journal, e), writer)
}

// An answer admitted although another was stored first (its read missed
// it) is not reported as recorded: the answer reads the record back and
// is refused, naming the first, which the run acts on.
func TestAnAnswerAdmittedSecondIsRefused(t *testing.T) {
	j := looptest.New()
	tools := []loop.Tool{&countingTool{name: "clock", answer: "noon"}, &countingTool{name: "calculator", answer: "42"}}
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
	if res, err := newEngine(t, j, loop.Config{Hooks: asker(t), Tools: tools}).Run(ctxT(t), req); err != nil || res.Reason != loop.ReasonWaiting {
		t.Fatalf("first attempt: %+v, %v", res, err)
	}
	if _, err := answerAs(t, j, req, "call_1_2", events.ActionRejectAndContinue, "bob", "no"); err != nil {
		t.Fatal(err)
	}
	first := j.Events()[len(j.Events())-1]
	h := &staleOnce{Journal: j, upTo: first.Stored}
	res, err := approval.Answer(ctxT(t), approval.Deps{History: h, Recorder: admittingAfter{j}, Settle: time.Second}, approval.Request{
		AgentID: req.AgentID, SessionID: req.SessionID, RunID: req.RunID, CallID: "call_1_2", Action: events.ActionApprove, By: person("alice")})
	var answered *approval.AnsweredError
	if !errors.As(err, &answered) || answered.First.By != "bob" || (res != nil && len(res.Resolved) != 0) {
		t.Fatalf("answer admitted second: %+v, %v; want refused naming bob's", res, err)
	}
}
