package loop_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/loop/scripted"
)

// asker is a tool.before hook that asks a human about the calculator.
func asker(t *testing.T) *interceptors.Chain {
	t.Helper()
	chain := interceptors.NewChain()
	register(t, chain, interceptors.Registration{Plugin: "human", Stage: events.StageToolBefore, Tools: "calculator"},
		func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Ask, Reason: "maths needs a human"}, nil
		})
	return chain
}

// queue records the wake-ups a waiting run schedules and the resumptions
// its answers queue.
type queue struct {
	wakes   atomic.Int32
	at      atomic.Pointer[time.Time]
	resumes atomic.Int32
}

func (q *queue) WakeAt(_ context.Context, req *events.RunRequest, t time.Time) error {
	if req.Answer == nil || req.Answer.Action != events.ActionExpire {
		return errors.New("not an expiry")
	}
	q.wakes.Add(1)
	q.at.Store(&t)
	return nil
}

func (q *queue) Resume(_ context.Context, req *events.RunRequest, id string) error {
	if !req.Resume || id == "" {
		return errors.New("not a resumption")
	}
	q.resumes.Add(1)
	return nil
}

// answerAndGoOn takes an answer as a worker does, and when that queued the
// run's resumption, resumes it as the worker that takes it would.
func answerAndGoOn(t *testing.T, eng *loop.Engine, ans *events.RunRequest) (*loop.AnswerResult, *loop.Result, error) {
	t.Helper()
	ar, err := eng.Answer(ctxT(t), ans)
	if err != nil || !ar.Resumed {
		return ar, nil, err
	}
	res, err := eng.Run(ctxT(t), &events.RunRequest{RunID: ans.RunID, AgentID: ans.AgentID, SessionID: ans.SessionID, Resume: true})
	return ar, res, err
}

// beforeHumanIntervention: a hook's ask records approval.requested and ends
// the attempt with the run waiting; the step's other call ran; nothing is
// ended and an expiry wake-up is scheduled.
func TestAskPausesTheRunForAHuman(t *testing.T) {
	j := looptest.New()
	w := &queue{}
	calc := &countingTool{name: "calculator", answer: "42"}
	clock := &countingTool{name: "clock", answer: "noon"}
	eng := newEngine(t, j, loop.Config{Hooks: asker(t), Tools: []loop.Tool{clock, calc}, Queue: w, Approval: loop.Approval{Expiry: time.Hour}})
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
	res, err := eng.Run(ctxT(t), req)
	if err != nil || res.Reason != loop.ReasonWaiting || res.Ended || len(res.Waiting) != 1 || res.Waiting[0].Call.ID != "call_1_2" {
		t.Fatalf("Run = %+v, %v; want it waiting for call_1_2", res, err)
	}
	if clock.calls.Load() != 1 || calc.calls.Load() != 0 {
		t.Fatalf("clock ran %d, calculator %d; want 1 and 0", clock.calls.Load(), calc.calls.Load())
	}
	evs := j.Events()
	reqs := payloadsOf[events.ApprovalRequested](t, evs, events.StageApprovalRequested)
	if len(reqs) != 1 || reqs[0].Plugin != "human" || reqs[0].Reason != "maths needs a human" || reqs[0].OnExpiry != events.ActionRejectAndContinue ||
		reqs[0].ExpiresAt.Before(time.Now().Add(59*time.Minute)) {
		t.Fatalf("approval.requested %+v", reqs)
	}
	if n := countStages(evs, events.StageRunCompleted) + countStages(evs, events.StageRunFailed) + countStages(evs, events.StageStepCompleted); n != 0 {
		t.Fatalf("a waiting run recorded an end or a completed step: %v", stagesOf(evs))
	}
	if w.wakes.Load() != 1 || w.at.Load().Sub(reqs[0].ExpiresAt) != 0 {
		t.Fatalf("wake-ups %d at %v, want one at the expiry %v", w.wakes.Load(), w.at.Load(), reqs[0].ExpiresAt)
	}
	// Run again without an answer, it still waits, and runs nothing.
	again, err := eng.Run(ctxT(t), req)
	if err != nil || again.Reason != loop.ReasonWaiting || calc.calls.Load() != 0 {
		t.Fatalf("run again: %+v, %v", again, err)
	}
}

// afterHumanIntervention and onStopByHumanIntervention: approve runs the
// call with its arguments as requested; reject ends the run (rejected);
// reject-and-continue gives the reason to the model and goes on.
func TestAnswersToAnApproval(t *testing.T) {
	for _, tc := range []struct {
		action, reason string
		want           string // the run's reason
		ran            int32
		result         string // the calculator's tool.after content
	}{
		{events.ActionApprove, "", events.ReasonDone, 1, "42"},
		{events.ActionReject, "not today", events.ReasonRejected, 0, ""},
		{events.ActionRejectAndContinue, "use your head", events.ReasonDone, 0, "rejected by alice: use your head"},
	} {
		t.Run(tc.action, func(t *testing.T) {
			j := looptest.New()
			calc := &countingTool{name: "calculator", answer: "42"}
			tools := []loop.Tool{&countingTool{name: "clock", answer: "noon"}, calc}
			req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
			if res, err := newEngine(t, j, loop.Config{Hooks: asker(t), Tools: tools}).Run(ctxT(t), req); err != nil || res.Reason != loop.ReasonWaiting {
				t.Fatalf("first attempt: %+v, %v", res, err)
			}
			// Another worker, without the hook, takes the answer.
			_, res, err := answerAndGoOn(t, newEngine(t, j, loop.Config{Tools: tools, Queue: &queue{}}), answer(req, "call_1_2", tc.action, "alice", tc.reason))
			if err != nil || res.Reason != tc.want || !res.Ended {
				t.Fatalf("answered: %+v, %v; want %s", res, err, tc.want)
			}
			if calc.calls.Load() != tc.ran {
				t.Fatalf("the calculator ran %d times, want %d", calc.calls.Load(), tc.ran)
			}
			evs := j.Events()
			resolved := payloadsOf[events.ApprovalResolved](t, evs, events.StageApprovalResolved)
			if len(resolved) != 1 || resolved[0].Action != tc.action || resolved[0].By != "alice" || resolved[0].Approved != (tc.action == events.ActionApprove) || resolved[0].AnswerID == "" {
				t.Fatalf("approval.resolved %+v", resolved)
			}
			if tc.action == events.ActionReject {
				if !strings.Contains(res.Detail, "rejected by alice: not today") {
					t.Fatalf("detail %q", res.Detail)
				}
				return
			}
			var calcAfter []string
			for _, ta := range payloadsOf[events.ToolAfter](t, evs, events.StageToolAfter) {
				if ta.Call.Name == "calculator" {
					calcAfter = append(calcAfter, ta.Result.Content)
				}
			}
			if len(calcAfter) != 1 || calcAfter[0] != tc.result {
				t.Fatalf("calculator tool.after %q, want %q", calcAfter, tc.result)
			}
		})
	}
}

// Several calls of a step waiting are answered one by one; the run goes on
// once all are. A second answer to a call is refused and changes nothing;
// an answer for an unknown call or run is an error naming it.
func TestApprovalsAnsweredOneByOne(t *testing.T) {
	j := looptest.New()
	need := loop.Approval{Required: func(c events.ToolCall) string { return "every call needs a human" }}
	clock := &countingTool{name: "clock", answer: "noon"}
	calc := &countingTool{name: "calculator", answer: "42"}
	tools := []loop.Tool{clock, calc}
	q := &queue{}
	eng := newEngine(t, j, loop.Config{Approval: need, Tools: tools, Queue: q})
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
	res, err := eng.Run(ctxT(t), req)
	if err != nil || len(res.Waiting) != 2 {
		t.Fatalf("first attempt: %+v, %v; want two calls waiting", res, err)
	}
	ar, _, err := answerAndGoOn(t, eng, answer(req, "call_1_1", events.ActionApprove, "bob", ""))
	if err != nil || ar.Resumed || len(ar.Waiting) != 1 || ar.Waiting[0].Call.ID != "call_1_2" {
		t.Fatalf("after the first answer: %+v, %v; want it waiting for call_1_2, not resumed", ar, err)
	}
	if clock.calls.Load() != 0 {
		t.Fatal("an approved call ran before every call of its step was answered")
	}
	before := len(j.Events())
	_, err = eng.Answer(ctxT(t), answer(req, "call_1_1", events.ActionReject, "eve", "no"))
	if !errors.Is(err, loop.ErrBadAnswer) || !strings.Contains(err.Error(), "answered already (approve by bob)") {
		t.Fatalf("a second answer: %v, want ErrBadAnswer naming the first", err)
	}
	for _, bad := range []*events.RunRequest{
		answer(req, "call_9_9", events.ActionApprove, "bob", ""),
		answer(&events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1"}, "call_1_2", events.ActionApprove, "bob", ""),
	} {
		if _, err := eng.Answer(ctxT(t), bad); !errors.Is(err, loop.ErrBadAnswer) || !strings.Contains(err.Error(), bad.RunID) {
			t.Fatalf("answer %+v: %v, want ErrBadAnswer naming it", bad.Answer, err)
		}
	}
	if len(j.Events()) != before {
		t.Fatal("a refused answer wrote events")
	}
	ar, res, err = answerAndGoOn(t, eng, answer(req, "call_1_2", events.ActionApprove, "bob", ""))
	if err != nil || !ar.Resumed || res.Reason != events.ReasonDone || clock.calls.Load() != 1 || calc.calls.Load() != 1 {
		t.Fatalf("after both answers: %+v %+v, %v; clock %d, calculator %d", ar, res, err, clock.calls.Load(), calc.calls.Load())
	}
	// Answering an ended run is refused too.
	if _, err := eng.Answer(ctxT(t), answer(req, "call_1_2", events.ActionApprove, "bob", "")); !errors.Is(err, loop.ErrBadAnswer) || !strings.Contains(err.Error(), "has ended") {
		t.Fatalf("answer to an ended run: %v", err)
	}
}

// A request not answered by its expiry resolves by the agent's policy,
// recorded like any answer (by hookbus, expired): the scheduled wake-up
// does it, and so does any resume after the expiry.
func TestApprovalExpiresByPolicy(t *testing.T) {
	for _, tc := range []struct {
		onExpiry, want string
		ran            int32
	}{
		{"", events.ReasonDone, 0}, // default: deny (reject and continue)
		{events.ActionReject, events.ReasonRejected, 0},
		{events.ActionApprove, events.ReasonDone, 1},
	} {
		t.Run("on_expiry="+tc.onExpiry, func(t *testing.T) {
			j := looptest.New()
			calc := &countingTool{name: "calculator", answer: "42"}
			tools := []loop.Tool{&countingTool{name: "clock", answer: "noon"}, calc}
			cfg := loop.Config{Hooks: asker(t), Tools: tools, Queue: &queue{}, Approval: loop.Approval{Expiry: time.Second, OnExpiry: tc.onExpiry}}
			eng := newEngine(t, j, cfg)
			req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
			res, err := eng.Run(ctxT(t), req)
			if err != nil || res.Reason != loop.ReasonWaiting {
				t.Fatalf("first attempt: %+v, %v", res, err)
			}
			expires := res.Waiting[0].ExpiresAt
			// An early wake-up changes nothing.
			wake := &events.RunRequest{RunID: req.RunID, AgentID: "demo", SessionID: "s1",
				Answer: &events.ApprovalAnswer{Action: events.ActionExpire, AnswerID: events.NewID()}}
			if time.Now().Before(expires) {
				if ar, err := eng.Answer(ctxT(t), wake); err != nil || ar.Resumed || len(ar.Resolved) != 0 {
					t.Fatalf("an early wake-up: %+v, %v", ar, err)
				}
			}
			for time.Now().Before(expires) {
				time.Sleep(time.Until(expires) + 10*time.Millisecond) // the expiry is the condition, not a guess
			}
			wake.Answer.AnswerID = events.NewID()
			_, res, err = answerAndGoOn(t, eng, wake)
			if err != nil || res.Reason != tc.want || calc.calls.Load() != tc.ran {
				t.Fatalf("after the expiry: %+v, %v; calculator ran %d", res, err, calc.calls.Load())
			}
			resolved := payloadsOf[events.ApprovalResolved](t, j.Events(), events.StageApprovalResolved)
			want := tc.onExpiry
			if want == "" {
				want = events.ActionRejectAndContinue
			}
			if len(resolved) != 1 || !resolved[0].Expired || resolved[0].By != "hookbus" || resolved[0].Action != want {
				t.Fatalf("approval.resolved %+v", resolved)
			}
		})
	}
}

// A worker that stops after every answer is recorded, while it runs the
// approved tool, leaves the outcome unknown: the next attempt does not run
// a non-idempotent tool again.
func TestApprovedToolIsNotRunTwice(t *testing.T) {
	j := looptest.New()
	calc := &countingTool{name: "calculator", answer: "42"}
	tools := []loop.Tool{&countingTool{name: "clock", answer: "noon"}, calc}
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
	if _, err := newEngine(t, j, loop.Config{Hooks: asker(t), Tools: tools}).Run(ctxT(t), req); err != nil {
		t.Fatal(err)
	}
	if ar, err := newEngine(t, j, loop.Config{Tools: tools, Queue: &queue{}}).Answer(ctxT(t), answer(req, "call_1_2", events.ActionApprove, "bob", "")); err != nil || !ar.Resumed {
		t.Fatalf("answer: %+v, %v", ar, err)
	}
	// The resuming attempt records run.started, runs the calculator, and
	// loses its connection before tool.after.
	n := len(j.Events())
	cut := &failingEmitter{inner: j, limit: 1}
	eng := newEngine(t, j, loop.Config{Emitter: cut, Tools: tools, Model: scripted.New(nil)})
	if _, err := eng.Run(ctxT(t), &events.RunRequest{RunID: req.RunID, AgentID: "demo", SessionID: "s1", Resume: true}); !errors.Is(err, loop.ErrUnrecorded) {
		t.Fatalf("cut attempt: %v", err)
	}
	if calc.calls.Load() != 1 || len(j.Events()) != n+1 {
		t.Fatalf("calculator ran %d times, %d events stored by the cut attempt", calc.calls.Load(), len(j.Events())-n)
	}
	res, err := newEngine(t, j, loop.Config{Tools: tools}).Run(ctxT(t), req)
	if err != nil || res.Reason != events.ReasonDone || calc.calls.Load() != 1 {
		t.Fatalf("resumed: %+v, %v; calculator ran %d times", res, err, calc.calls.Load())
	}
	failed := payloadsOf[events.ToolFailed](t, j.Events(), events.StageToolFailed)
	if len(failed) != 1 || !failed[0].Unknown {
		t.Fatalf("tool.failed %+v, want the outcome unknown", failed)
	}
}

func answer(req *events.RunRequest, call, action, by, reason string) *events.RunRequest {
	return &events.RunRequest{RunID: req.RunID, AgentID: req.AgentID, SessionID: req.SessionID,
		Answer: &events.ApprovalAnswer{CallID: call, Action: action, By: by, Reason: reason, AnswerID: events.NewID()}}
}
