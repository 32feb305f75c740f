package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/record/approval"
)

// The recorded histories of the event shapes added after the first
// recording: approvals (approval.requested, approval.resolved, a run that
// waits), compaction (compact.before, compact.after, compact.failed) and
// sub-agents (subagent.before, subagent.after, subagent.failed, child
// sessions with lineage).

func shapeScenarios() []*historyScenario {
	return []*historyScenario{
		{
			name: "approval-answered",
			about: "Two runs of one session that wait for a human. In the first a tool.before hook asks about the calculator: the clock runs, " +
				"approval.requested is recorded and the attempt ends, the run waiting; an answer (approve, by alice) is recorded as " +
				"approval.resolved, and the run's resumption (a new attempt, run.started resumed) runs the calculator and ends done. In the " +
				"second the agent's approval policy requires approval of the calculator; the answer is reject_and_continue (by bob): the " +
				"model is given the reason as the calculator's result, and the run ends done.",
			hooks:  asker,
			config: requireCalculator,
			record: func(t *testing.T, sc *historyScenario, j *looptest.Journal) {
				req := sc.mustWait(t, j, loop.Config{Hooks: asker(t)}, "What time is it, and what is 6*7? (a human approves the calculator)", "call_1_2")
				sc.mustAnswer(t, j, req, approval.Request{CallID: "call_1_2", Action: events.ActionApprove, By: person("alice"),
					Comment: "fine", AnswerID: answerID(1)}, events.ReasonDone)
				req = sc.mustWait(t, j, loop.Config{}, "And once more? (the policy asks about the calculator)", "call_1_2")
				sc.mustAnswer(t, j, req, approval.Request{CallID: "call_1_2", Action: events.ActionRejectAndContinue, By: person("bob"),
					Reason: "work it out by hand", AnswerID: answerID(2)}, events.ReasonDone)
			},
		},
		{
			name: "approval-waiting",
			about: "Unfinished: the agent's approval policy requires approval of every call. Both calls of the first step wait; the clock's " +
				"is answered (approve, by alice), the calculator's is not. The resume (a new attempt) acts on no answer until every call of " +
				"the step has one: it records its run.started and ends waiting again, for the calculator; nothing runs, the model is not asked.",
			config: requireEveryCall,
			record: func(t *testing.T, sc *historyScenario, j *looptest.Journal) {
				req := sc.mustWait(t, j, loop.Config{}, "What time is it, and what is 6*7? (every call needs a human)", "call_1_1", "call_1_2")
				ar, err := approval.Answer(ctxT(t), approval.Deps{History: j, Recorder: j}, approval.Request{
					AgentID: req.AgentID, SessionID: req.SessionID, RunID: req.RunID,
					CallID: "call_1_1", Action: events.ActionApprove, By: person("alice"), AnswerID: answerID(1)})
				if err != nil || len(ar.Waiting) != 1 || ar.Waiting[0].Call.ID != "call_1_2" {
					t.Fatalf("answer: %+v, %v; want the calculator still waiting", ar, err)
				}
			},
		},
		{
			name: "approval-rejected",
			about: "A tool.before hook asks about the calculator; the run waits; the answer is reject (by alice): the resumption ends the " +
				"run with reason rejected, the calculator not run. Its call is given a no-result answer in the session.",
			hooks: asker,
			record: func(t *testing.T, sc *historyScenario, j *looptest.Journal) {
				req := sc.mustWait(t, j, loop.Config{Hooks: asker(t)}, "What is 6*7? (a human rejects the calculator)", "call_1_2")
				sc.mustAnswer(t, j, req, approval.Request{CallID: "call_1_2", Action: events.ActionReject, By: person("alice"),
					Reason: "not today", AnswerID: answerID(1)}, events.ReasonRejected)
			},
		},
		{
			name: "approval-expired",
			about: "A tool.before hook asks about the calculator, with a 1 s expiry; nobody answers. After the expiry the scheduled wake-up " +
				"(an answer with action expire) resolves the request by the policy's on_expiry (reject_and_continue): approval.resolved by " +
				"hookbus, expired; the resumption gives the model the reason as the calculator's result, and the run ends done.",
			hooks:  asker,
			config: expireInASecond,
			record: func(t *testing.T, sc *historyScenario, j *looptest.Journal) {
				req := sc.mustWait(t, j, loop.Config{Hooks: asker(t)}, "What is 6*7? (nobody answers in time)", "call_1_2")
				reqs := payloadsOf[events.ApprovalRequested](t, j.Events(), events.StageApprovalRequested)
				expires := reqs[len(reqs)-1].ExpiresAt
				for time.Now().Before(expires) {
					time.Sleep(time.Until(expires) + time.Millisecond) // the expiry is the condition, not a guess
				}
				n := len(j.Events())
				rs := &loop.Resumer{History: j, Recorder: j, Queue: &queue{}}
				if err := rs.Due(ctxT(t), events.Wake{RunID: req.RunID, AgentID: req.AgentID, SessionID: req.SessionID, At: expires}); err != nil {
					t.Fatalf("the wake-up: %v", err)
				}
				sc.mustResume(t, j, req, n, events.ReasonDone)
			},
		},
		{
			name: "compacted",
			about: "Four runs of one session with a small context budget (loop.Config.Compaction: 100 tokens, keep 4): compact.before, " +
				"the summary call, compact.after, several times. The rebuild starts from the last compact.after (the summary, then the " +
				"messages kept, never starting with a tool result), and a read bounded by its read_from rebuilds the same conversation.",
			script: compactingDemo,
			config: compactAt(100),
			record: func(t *testing.T, sc *historyScenario, j *looptest.Journal) {
				for _, p := range []string{"What time is it, and what is 6*7?", "And now?", "Once more, please.", "A last time?"} {
					sc.mustRun(t, j, loop.Config{}, p, events.ReasonDone)
				}
				if n := countStages(j.Events(), events.StageCompactAfter); n < 2 {
					t.Fatalf("%d compactions, want at least 2", n)
				}
			},
		},
		{
			name: "compact-failed",
			about: "Two runs of one session past a small context budget whose model fails every summary: compact.failed, and the run " +
				"goes on uncompacted (the agent does not fail on it) and ends done. The rebuild reads every message.",
			config: func(cfg *loop.Config) {
				compactAt(60)(cfg)
				cfg.Model = failingSummaries{cfg.Model}
			},
			record: func(t *testing.T, sc *historyScenario, j *looptest.Journal) {
				sc.mustRun(t, j, loop.Config{}, "What time is it, and what is 6*7?", events.ReasonDone)
				sc.mustRun(t, j, loop.Config{}, "And once more?", events.ReasonDone)
				if n := countStages(j.Events(), events.StageCompactFailed); n == 0 {
					t.Fatal("no compact.failed")
				}
			},
		},
		{
			name: "subagent",
			about: "Two runs of one session whose agent hands a task to the helper agent (the Task tool): tool.before, subagent.before, " +
				"the child run in a session of its own (its events carry the parent's ids), subagent.after, tool.after; the child's answer " +
				"is the Task call's result. The history holds the three sessions' events; each is rebuilt from its own: the parent's " +
				"conversation holds none of the children's messages.",
			script:    delegatingScript,
			subagents: []historySubagent{helperAgent},
			record: func(t *testing.T, sc *historyScenario, j *looptest.Journal) {
				sc.mustRun(t, j, loop.Config{}, "Ask the helper: what is 6*7?", events.ReasonDone)
				sc.mustRun(t, j, loop.Config{}, "Ask it once more.", events.ReasonDone)
				if n := countStages(j.Events(), events.StageSubagentAfter); n != 2 {
					t.Fatalf("%d subagent.after, want 2", n)
				}
			},
		},
		{
			name: "subagent-failed",
			about: "Two runs whose Task call fails, each recorded as subagent.failed and given to the model as an error result: a " +
				"subagent.before hook denies the call (the child named in subagent.before never runs), then a call of an agent this one " +
				"may not call (no subagent.before). Both runs end done.",
			script:    delegatingScript,
			subagents: []historySubagent{helperAgent},
			hooks:     denyDelegation,
			record: func(t *testing.T, sc *historyScenario, j *looptest.Journal) {
				sc.mustRun(t, j, loop.Config{Hooks: denyDelegation(t)}, "Ask the helper: what is 6*7? (the call is denied)", events.ReasonDone)
				sc.mustRun(t, j, loop.Config{Hooks: denyDelegation(t), Model: scripted.New(strangerScript)}, "Ask a stranger.", events.ReasonDone)
				if n := countStages(j.Events(), events.StageSubagentFailed); n != 2 {
					t.Fatalf("%d subagent.failed, want 2", n)
				}
			},
		},
		{
			name: "subagent-child-cut",
			about: "Unfinished: the helper's worker stopped after the child run's calculator tool.after (its step not completed); the " +
				"parent's attempt stopped with it. The resume of the parent resumes the same child (its ids are in subagent.before: no new " +
				"subagent.before), which completes its step, asks its model for the answer and ends; then subagent.after, the Task call's " +
				"tool.after, and the parent's answer.",
			script:    delegatingScript,
			subagents: []historySubagent{helperAgent},
			record: func(t *testing.T, sc *historyScenario, j *looptest.Journal) {
				// The child's appends fail after its tool.after: intake,
				// run.started, step.started, context.assembled,
				// model.responded, tool.before, tool.after.
				cut := &failingEmitter{inner: j, limit: 7}
				eng := sc.build(t, j, loop.Config{}, nil, func(c *loop.Config) { c.Emitter = cut })[historyAgent]
				res, err := eng.Run(ctxT(t), sc.request("Ask the helper: what is 6*7?"))
				if !errors.Is(err, loop.ErrUnrecorded) || res != nil && res.Ended {
					t.Fatalf("parent with its child cut: %+v, %v; want it not ended (ErrUnrecorded)", res, err)
				}
				if n := len(slices.DeleteFunc(j.Events(), func(e *events.Event) bool { return e.AgentID != helperAgent.id })); n != 7 {
					t.Fatalf("the cut child stored %d events, want 7", n)
				}
			},
		},
	}
}

// requireCalculator is an approval policy: the calculator needs a human.
func requireCalculator(cfg *loop.Config) {
	cfg.Approval.Required = func(c events.ToolCall) string {
		if c.Name == "calculator" {
			return "the calculator needs a human"
		}
		return ""
	}
}

// requireEveryCall is an approval policy: every call needs a human.
func requireEveryCall(cfg *loop.Config) {
	cfg.Approval.Required = func(events.ToolCall) string { return "every call needs a human" }
}

// expireInASecond gives a request for approval a second to be answered.
func expireInASecond(cfg *loop.Config) {
	cfg.Approval.Expiry = time.Second
}

// compactAt sets a context budget of tokens, keeping the last 4 messages.
func compactAt(tokens int) func(*loop.Config) {
	return func(cfg *loop.Config) { cfg.Compaction = loop.Compaction{MaxTokens: tokens, Keep: 4} }
}

// compactingDemo is the demo script, with a summary.
var compactingDemo = &scripted.Script{Name: "demo", Replies: scripted.Demo().Replies,
	Summary: "Summary of {{messages}} messages: the user asked the time and 6*7, and was told."}

// helperAgent does sums: the calculator, then its answer.
var helperAgent = historySubagent{id: "helper", description: "does sums", script: &scripted.Script{Name: "helper", Replies: []scripted.Reply{
	{ToolCalls: []scripted.ToolCall{{Name: "calculator", Arguments: json.RawMessage(`{"expression":"6*7"}`)}}},
	{Content: "{{prompt}}: {{tool:calculator}}"},
}}}

// delegatingScript hands the question to the helper, then answers with
// what it said.
var delegatingScript = &scripted.Script{Name: "delegating", Replies: []scripted.Reply{
	{Content: "Let me ask the helper.", ToolCalls: []scripted.ToolCall{taskCall("helper", "what is 6*7")}},
	{Content: "The helper says {{tool:Task}}"},
}}

// strangerScript calls an agent that is no sub-agent of this one.
var strangerScript = &scripted.Script{Name: "stranger", Replies: []scripted.Reply{
	{Content: "Let me ask a stranger.", ToolCalls: []scripted.ToolCall{taskCall("stranger", "hello")}},
	{Content: "The stranger says {{tool:Task}}"},
}}

// denyDelegation denies every sub-agent call on subagent.before.
func denyDelegation(t *testing.T) *interceptors.Chain {
	c := interceptors.NewChain()
	register(t, c, interceptors.Registration{Plugin: "gate", Stage: events.StageSubagentBefore},
		func(_ context.Context, _ *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Deny, Reason: "no delegation today"}, nil
		})
	return c
}

// answerID is the id of a scenario's n-th answer: stable, so that a
// recording is the same each time it is made.
func answerID(n uint64) string { return stableULID(n, 'A') }

// mustWait runs prompt as a new run of the session and checks that it
// waits for approval of exactly the calls named.
func (sc *historyScenario) mustWait(t *testing.T, j *looptest.Journal, cfg loop.Config, prompt string, calls ...string) *events.RunRequest {
	t.Helper()
	req := sc.request(prompt)
	cfg.Queue = &queue{}
	res, err := sc.engine(t, j, cfg).Run(ctxT(t), req)
	if err != nil || res.Reason != loop.ReasonWaiting || res.Ended {
		t.Fatalf("run %q: %+v, %v; want it waiting", prompt, res, err)
	}
	var waiting []string
	for _, w := range res.Waiting {
		waiting = append(waiting, w.Call.ID)
	}
	if !slices.Equal(waiting, calls) {
		t.Fatalf("run %q waits for %v, want %v", prompt, waiting, calls)
	}
	return req
}

// mustAnswer records ans for run req as a client does (AnswerApproval),
// checks that it left no call of the step waiting, and resumes the run
// (mustResume).
func (sc *historyScenario) mustAnswer(t *testing.T, j *looptest.Journal, req *events.RunRequest, ans approval.Request, reason string) {
	t.Helper()
	ans.AgentID, ans.SessionID, ans.RunID = req.AgentID, req.SessionID, req.RunID
	n := len(j.Events())
	ar, err := approval.Answer(ctxT(t), approval.Deps{History: j, Recorder: j}, ans)
	if err != nil || len(ar.Resolved) != 1 || len(ar.Waiting) != 0 {
		t.Fatalf("answer %+v: %+v, %v; want it recorded, nothing left waiting", ans, ar, err)
	}
	sc.mustResume(t, j, req, n, reason)
}

// mustResume has a worker's Resumer read the answers recorded from index
// since of the journal on, checks that it queued the run's resumption,
// and resumes the run as the worker that takes it does (Engine.Run with
// Resume), checking how it ends.
func (sc *historyScenario) mustResume(t *testing.T, j *looptest.Journal, req *events.RunRequest, since int, reason string) {
	t.Helper()
	q := &queue{}
	rs := &loop.Resumer{History: j, Recorder: j, Queue: q}
	for _, e := range j.Events()[since:] {
		if err := rs.Resolved(ctxT(t), e); err != nil {
			t.Fatal(err)
		}
	}
	if q.resumes.Load() != 1 {
		t.Fatalf("%d resumptions queued, want 1", q.resumes.Load())
	}
	resume := &events.RunRequest{RunID: req.RunID, AgentID: req.AgentID, SessionID: req.SessionID, Resume: true}
	res, err := sc.engine(t, j, loop.Config{}).Run(ctxT(t), resume)
	if err != nil || res.Reason != reason || !res.Ended || !res.Resumed {
		t.Fatalf("resumed: %+v, %v; want it ended %s", res, err, reason)
	}
}
