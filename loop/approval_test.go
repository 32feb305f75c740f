package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/record/approval"
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
// queued for it.
type queue struct {
	mu      sync.Mutex
	wakes   atomic.Int32
	at      atomic.Pointer[time.Time]
	resumes atomic.Int32
	last    *events.RunRequest
	ids     []string
}

func (q *queue) WakeAt(_ context.Context, w events.Wake) error {
	if err := w.Validate(); err != nil {
		return err
	}
	q.wakes.Add(1)
	q.at.Store(&w.At)
	return nil
}

func (q *queue) Resume(_ context.Context, req *events.RunRequest, id string) error {
	if !req.Resume || id == "" {
		return errors.New("not a resumption")
	}
	q.resumes.Add(1)
	q.mu.Lock()
	q.last, q.ids = req, append(q.ids, id)
	q.mu.Unlock()
	return nil
}

// person is an answerer as the CLI records one: authenticated as who, over
// a connection of NATS user who.
func person(who string) events.Actor {
	return events.Actor{Identity: who, Via: "nats", Writer: who, Channel: events.ChannelCLI}
}

// answerAs records an answer to run req's call as a client does.
func answerAs(t *testing.T, j *looptest.Journal, req *events.RunRequest, call, action, who, reason string) (*approval.Result, error) {
	t.Helper()
	return approval.Answer(ctxT(t), approval.Deps{History: j, Recorder: j, Settle: time.Second}, approval.Request{
		AgentID: req.AgentID, SessionID: req.SessionID, RunID: req.RunID, CallID: call, Action: action, Reason: reason, By: person(who)})
}

// resumeFromRecord has a worker's Resumer read the approval.resolved
// events stored from index since of the journal on, and, when that queued
// the run's resumption, runs it on eng as the worker that takes it does.
func resumeFromRecord(t *testing.T, j *looptest.Journal, eng *loop.Engine, since int) (*loop.Result, *queue, error) {
	t.Helper()
	q := &queue{}
	rs := &loop.Resumer{History: j, Recorder: j, Queue: q}
	for _, e := range j.Events()[since:] {
		if err := rs.Resolved(ctxT(t), e); err != nil {
			t.Fatalf("resumer on %s: %v", e.Stage, err)
		}
	}
	if q.resumes.Load() == 0 {
		return nil, q, nil
	}
	res, err := eng.Run(ctxT(t), q.last)
	return res, q, err
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
// reject-and-continue gives the reason to the model and goes on. The
// answer records who gave it, as authenticated, and how.
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
			n := len(j.Events())
			ar, err := answerAs(t, j, req, "call_1_2", tc.action, "alice", tc.reason)
			if err != nil || len(ar.Resolved) != 1 || len(ar.Waiting) != 0 {
				t.Fatalf("answer: %+v, %v", ar, err)
			}
			// Another worker, without the hook, resumes the run from the record.
			res, _, err := resumeFromRecord(t, j, newEngine(t, j, loop.Config{Tools: tools, Queue: &queue{}}), n)
			if err != nil || res == nil || res.Reason != tc.want || !res.Ended {
				t.Fatalf("answered: %+v, %v; want %s", res, err, tc.want)
			}
			if calc.calls.Load() != tc.ran {
				t.Fatalf("the calculator ran %d times, want %d", calc.calls.Load(), tc.ran)
			}
			evs := j.Events()
			resolved := payloadsOf[events.ApprovalResolved](t, evs, events.StageApprovalResolved)
			if len(resolved) != 1 || resolved[0].Action != tc.action || resolved[0].By != "alice" || resolved[0].Approved != (tc.action == events.ActionApprove) || resolved[0].AnswerID == "" ||
				resolved[0].Identity != "alice" || resolved[0].Channel != events.ChannelCLI || resolved[0].Writer != "alice" {
				t.Fatalf("approval.resolved %+v", resolved)
			}
			for _, e := range evs {
				if e.Stage == events.StageApprovalResolved && e.Writer != "alice" {
					t.Fatalf("approval.resolved stored on the subject of %q, want alice's", e.Writer)
				}
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

// Several calls of a step waiting are answered one by one; the run is
// resumed once all are, once. A second answer to a call is refused at once,
// naming the first (who, how, when, which answer), and records nothing; an
// answer for an unknown call or run is an error naming it.
func TestApprovalsAnsweredOneByOne(t *testing.T) {
	j := looptest.New()
	need := loop.Approval{Required: func(c events.ToolCall) string { return "every call needs a human" }}
	clock := &countingTool{name: "clock", answer: "noon"}
	calc := &countingTool{name: "calculator", answer: "42"}
	tools := []loop.Tool{clock, calc}
	eng := newEngine(t, j, loop.Config{Approval: need, Tools: tools, Queue: &queue{}})
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
	res, err := eng.Run(ctxT(t), req)
	if err != nil || len(res.Waiting) != 2 {
		t.Fatalf("first attempt: %+v, %v; want two calls waiting", res, err)
	}
	n := len(j.Events())
	ar, err := answerAs(t, j, req, "call_1_1", events.ActionApprove, "bob", "")
	if err != nil || len(ar.Waiting) != 1 || ar.Waiting[0].Call.ID != "call_1_2" {
		t.Fatalf("after the first answer: %+v, %v; want it waiting for call_1_2", ar, err)
	}
	if res, q, _ := resumeFromRecord(t, j, eng, n); res != nil || q.resumes.Load() != 0 || clock.calls.Load() != 0 {
		t.Fatal("the run was resumed before every call of its step was answered")
	}
	before := len(j.Events())
	_, err = answerAs(t, j, req, "call_1_1", events.ActionReject, "eve", "no")
	var first *approval.AnsweredError
	if !errors.Is(err, approval.ErrBadAnswer) || !errors.As(err, &first) || first.First.Identity != "bob" ||
		!strings.Contains(err.Error(), "answered already: approve by bob (cli) at ") {
		t.Fatalf("a second answer: %v, want ErrBadAnswer naming the first", err)
	}
	for _, bad := range []struct{ run, call string }{{req.RunID, "call_9_9"}, {events.NewID(), "call_1_2"}} {
		r := &events.RunRequest{RunID: bad.run, AgentID: "demo", SessionID: "s1"}
		if _, err := answerAs(t, j, r, bad.call, events.ActionApprove, "bob", ""); !errors.Is(err, approval.ErrBadAnswer) || !strings.Contains(err.Error(), bad.run) {
			t.Fatalf("answer %s of %s: %v, want ErrBadAnswer naming it", bad.call, bad.run, err)
		}
	}
	if len(j.Events()) != before {
		t.Fatal("a refused answer wrote events")
	}
	ar, err = answerAs(t, j, req, "call_1_2", events.ActionApprove, "bob", "")
	if err != nil || len(ar.Waiting) != 0 {
		t.Fatalf("the second call's answer: %+v, %v", ar, err)
	}
	res, q, err := resumeFromRecord(t, j, eng, n)
	if err != nil || q.resumes.Load() != 1 || res.Reason != events.ReasonDone || clock.calls.Load() != 1 || calc.calls.Load() != 1 {
		t.Fatalf("after both answers: %+v, %v; %d resumptions, clock %d, calculator %d", res, err, q.resumes.Load(), clock.calls.Load(), calc.calls.Load())
	}
	// Answering an ended run is refused too, naming the call's answer.
	var answered *approval.AnsweredError
	if _, err := answerAs(t, j, req, "call_1_2", events.ActionApprove, "bob", ""); !errors.Is(err, approval.ErrBadAnswer) || !strings.Contains(err.Error(), "has ended") ||
		!errors.As(err, &answered) || answered.First.CallID != "call_1_2" || answered.Ended != events.StageRunCompleted {
		t.Fatalf("answer to an ended run: %v", err)
	}
}

// Two people answer the same call at the same moment: exactly one answer is
// recorded; the other is refused naming it. With no worker running.
func TestConcurrentAnswersOneWins(t *testing.T) {
	j := looptest.New()
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
	tools := []loop.Tool{&countingTool{name: "clock", answer: "noon"}, &countingTool{name: "calculator", answer: "42"}}
	if _, err := newEngine(t, j, loop.Config{Hooks: asker(t), Tools: tools}).Run(ctxT(t), req); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, who := range []string{"alice", "bob"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			action, reason := events.ActionApprove, ""
			if i == 1 {
				action, reason = events.ActionReject, "no"
			}
			_, errs[i] = answerAs(t, j, req, "call_1_2", action, who, reason)
		}()
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Fatalf("answers: %v and %v; want exactly one refused", errs[0], errs[1])
	}
	if n := countStages(j.Events(), events.StageApprovalResolved); n != 1 {
		t.Fatalf("%d approval.resolved recorded, want 1", n)
	}
}

// An answer is not recorded while the run's attempt still works on the
// step's other calls (its next event would take the answer's seq): it is
// refused with ErrRunBusy once the settle time is out.
func TestAnswerWaitsForTheStep(t *testing.T) {
	j := looptest.New()
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
	need := loop.Approval{Required: func(c events.ToolCall) string {
		if c.Name == "clock" {
			return "the clock needs a human"
		}
		return ""
	}}
	// The attempt stops (its record cut) after the clock's approval.requested,
	// before the calculator's tool.after: as if it were still running it.
	cut := &failingEmitter{inner: j, limit: 8}
	tools := []loop.Tool{&countingTool{name: "clock", answer: "noon"}, &countingTool{name: "calculator", answer: "42"}}
	_, _ = newEngine(t, j, loop.Config{Emitter: cut, Approval: need, Tools: tools}).Run(ctxT(t), req)
	evs := j.Events()
	if countStages(evs, events.StageApprovalRequested) != 1 || countStages(evs, events.StageToolAfter) != 0 {
		t.Fatalf("the cut attempt recorded %v", stagesOf(evs))
	}
	_, err := approval.Answer(ctxT(t), approval.Deps{History: j, Recorder: j, Settle: 200 * time.Millisecond}, approval.Request{
		AgentID: "demo", SessionID: "s1", RunID: req.RunID, CallID: "call_1_1", Action: events.ActionApprove, By: person("alice")})
	if !errors.Is(err, approval.ErrRunBusy) || !strings.Contains(err.Error(), "call_1_2") {
		t.Fatalf("answer while the step runs: %v, want ErrRunBusy naming call_1_2", err)
	}
	if len(j.Events()) != len(evs) {
		t.Fatal("a refused answer wrote events")
	}
}

// Each answer's record handled again (a redelivery, or two workers) queues
// the run's resumption under one id; an answer that did not complete the
// step queues nothing; a resumption carries the definition the run started
// with.
func TestResumerQueuesOneResumption(t *testing.T) {
	j := looptest.New()
	need := loop.Approval{Required: func(c events.ToolCall) string { return "every call needs a human" }}
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
	if _, err := newEngine(t, j, loop.Config{Approval: need}).Run(ctxT(t), req); err != nil {
		t.Fatal(err)
	}
	n := len(j.Events())
	for _, call := range []string{"call_1_1", "call_1_2"} {
		if _, err := answerAs(t, j, req, call, events.ActionApprove, "bob", ""); err != nil {
			t.Fatal(err)
		}
	}
	q := &queue{}
	digest := definition("demo", "1").Digest
	rs := &loop.Resumer{History: definedAs{j, digest}, Recorder: j, Queue: q}
	for range 2 {
		for _, e := range j.Events()[n:] {
			if err := rs.Resolved(ctxT(t), e); err != nil {
				t.Fatal(err)
			}
		}
	}
	if q.resumes.Load() != 2 || q.ids[0] != q.ids[1] || q.last.Definition != digest || q.last.RunID != req.RunID {
		t.Fatalf("resumptions %d under %v, last %+v; want the same one twice, with the run's definition", q.resumes.Load(), q.ids, q.last)
	}
}

// definedAs is a History whose runs' run.started name the agent
// definition digest (as a worker that records definitions writes it).
type definedAs struct {
	j      *looptest.Journal
	digest string
}

func (d definedAs) SessionEvents(ctx context.Context, agent, session string) ([]*events.Event, error) {
	evs, err := d.j.SessionEvents(ctx, agent, session)
	return d.defined(evs), err
}

func (d definedAs) RunEvents(ctx context.Context, agent, session, run string) ([]*events.Event, error) {
	evs, err := d.j.RunEvents(ctx, agent, session, run)
	return d.defined(evs), err
}

func (d definedAs) defined(evs []*events.Event) []*events.Event {
	for _, e := range evs {
		if e.Stage == events.StageRunStarted {
			var p events.RunStarted
			if e.DecodeData(&p) == nil {
				p.Definition = &events.Definition{Digest: d.digest}
				e.Data, _ = json.Marshal(p)
			}
		}
	}
	return evs
}

// A request not answered by its expiry resolves by the agent's policy,
// recorded like any answer (by hookbus, expired) when the wake-up is due;
// an early wake-up records nothing and schedules the next.
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
			n := len(j.Events())
			wake := events.Wake{RunID: req.RunID, AgentID: "demo", SessionID: "s1", At: expires}
			q := &queue{}
			rs := &loop.Resumer{History: j, Recorder: j, Queue: q}
			// An early wake-up changes nothing, and asks for the next.
			if time.Now().Before(expires) {
				if err := rs.Due(ctxT(t), wake); err != nil || len(j.Events()) != n {
					t.Fatalf("an early wake-up: %v, %d events written", err, len(j.Events())-n)
				}
				if q.wakes.Load() != 1 || !q.at.Load().Equal(expires) {
					t.Fatalf("early wake-up: %d wake-ups scheduled at %v, want one at %v", q.wakes.Load(), q.at.Load(), expires)
				}
			}
			for time.Now().Before(expires) {
				time.Sleep(time.Until(expires) + 10*time.Millisecond) // the expiry is the condition, not a guess
			}
			if err := rs.Due(ctxT(t), wake); err != nil {
				t.Fatalf("the wake-up: %v", err)
			}
			res, _, err = resumeFromRecord(t, j, eng, n)
			if err != nil || res == nil || res.Reason != tc.want || calc.calls.Load() != tc.ran {
				t.Fatalf("after the expiry: %+v, %v; calculator ran %d", res, err, calc.calls.Load())
			}
			resolved := payloadsOf[events.ApprovalResolved](t, j.Events(), events.StageApprovalResolved)
			want := tc.onExpiry
			if want == "" {
				want = events.ActionRejectAndContinue
			}
			if len(resolved) != 1 || !resolved[0].Expired || resolved[0].By != "hookbus" || resolved[0].Action != want ||
				resolved[0].Channel != events.ChannelExpiry || resolved[0].Identity != events.IdentityHookbus || resolved[0].Writer != "" {
				t.Fatalf("approval.resolved %+v", resolved)
			}
			// A person's answer after the expiry is refused, naming it.
			if _, err := answerAs(t, j, req, "call_1_2", events.ActionApprove, "alice", ""); !errors.Is(err, approval.ErrBadAnswer) {
				t.Fatalf("an answer after the expiry: %v", err)
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
	if ar, err := answerAs(t, j, req, "call_1_2", events.ActionApprove, "bob", ""); err != nil || len(ar.Waiting) != 0 {
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

// An answer given again with its id (a client retrying after a lost reply)
// is found recorded, not refused; with another id it is refused.
func TestAnswerGivenAgainWithItsID(t *testing.T) {
	j := looptest.New()
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
	tools := []loop.Tool{&countingTool{name: "clock", answer: "noon"}, &countingTool{name: "calculator", answer: "42"}}
	if _, err := newEngine(t, j, loop.Config{Hooks: asker(t), Tools: tools}).Run(ctxT(t), req); err != nil {
		t.Fatal(err)
	}
	ans := approval.Request{AgentID: "demo", SessionID: "s1", RunID: req.RunID, CallID: "call_1_2", Action: events.ActionApprove,
		By: person("alice"), AnswerID: events.NewID()}
	for i := range 2 {
		ar, err := approval.Answer(ctxT(t), approval.Deps{History: j, Recorder: j}, ans)
		if err != nil || len(ar.Resolved) != 1 || ar.Resolved[0].AnswerID != ans.AnswerID {
			t.Fatalf("answer #%d: %+v, %v", i+1, ar, err)
		}
	}
	if n := countStages(j.Events(), events.StageApprovalResolved); n != 1 {
		t.Fatalf("%d approval.resolved recorded, want 1", n)
	}
	ans.AnswerID = events.NewID()
	if _, err := approval.Answer(ctxT(t), approval.Deps{History: j, Recorder: j}, ans); !errors.Is(err, approval.ErrBadAnswer) {
		t.Fatalf("the same answer with another id: %v", err)
	}
}
