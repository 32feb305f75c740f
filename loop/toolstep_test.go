package loop_test

import (
	"context"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/loop/scripted"
)

// A tool.before hook's decision takes the same effect whether the attempt
// acts on it as the hook answers, or a resumed attempt reads it from the
// record (the worker stopped right after the tool.before): the same tool
// result, approval request or end, also when the hook gave no reason.
func TestToolDecisionTakesEffectAliveAndRecorded(t *testing.T) {
	for _, tc := range []struct {
		name string
		dec  *interceptors.Decision
	}{
		{"deny", &interceptors.Decision{Kind: interceptors.Deny}},
		{"deny with a reason", &interceptors.Decision{Kind: interceptors.Deny, Reason: "not now"}},
		{"mock", interceptors.Mocked("half past", false)},
		{"stop", &interceptors.Decision{Kind: interceptors.Stop}},
		{"ask", &interceptors.Decision{Kind: interceptors.Ask}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hooks := interceptors.NewChain()
			register(t, hooks, interceptors.Registration{Plugin: "guard", Stage: events.StageToolBefore, Tools: "clock"},
				func(context.Context, *interceptors.Request) (*interceptors.Decision, error) { return tc.dec, nil })
			run := func(j *looptest.Journal, cfg loop.Config) (*loop.Result, error) {
				cfg.Tools = []loop.Tool{&countingTool{name: "clock", answer: "noon"}, &countingTool{name: "calculator", answer: "42"}}
				cfg.Queue = &queue{}
				return newEngine(t, j, cfg).Run(ctxT(t), &events.RunRequest{RunID: "run-1", AgentID: "demo", SessionID: "s1", Prompt: "go"})
			}

			live := looptest.New()
			want, err := run(live, loop.Config{Hooks: hooks})
			if err != nil {
				t.Fatal(err)
			}

			// intake, run.started, step.started, context.assembled,
			// model.responded, hook.decided, tool.before | ...
			cut := looptest.New()
			if res, err := run(cut, loop.Config{Hooks: hooks, Emitter: &failingEmitter{inner: cut, limit: 7}}); err == nil || res != nil && res.Ended {
				t.Fatalf("first attempt: %+v, %v; want it cut off", res, err)
			}
			if evs := cut.Events(); evs[len(evs)-1].Stage != events.StageToolBefore {
				t.Fatalf("the cut attempt recorded %v, want tool.before last", stagesOf(evs))
			}
			got, err := run(cut, loop.Config{}) // the hook is gone: the record holds its decision
			if err != nil {
				t.Fatal(err)
			}

			if got.Reason != want.Reason || got.Detail != want.Detail || got.Answer != want.Answer || len(got.Waiting) != len(want.Waiting) {
				t.Fatalf("resumed: %s (%s) %q, %d waiting\nlive:    %s (%s) %q, %d waiting",
					got.Reason, got.Detail, got.Answer, len(got.Waiting), want.Reason, want.Detail, want.Answer, len(want.Waiting))
			}
			for i := range want.Waiting {
				if g, w := got.Waiting[i], want.Waiting[i]; g.Call.ID != w.Call.ID || g.Plugin != w.Plugin || g.Reason != w.Reason {
					t.Fatalf("resumed waits for %s (%s: %q), live for %s (%s: %q)", g.Call.ID, g.Plugin, g.Reason, w.Call.ID, w.Plugin, w.Reason)
				}
			}
			wantAfter := payloadsOf[events.ToolAfter](t, runEvents(live.Events(), "run-1"), events.StageToolAfter)
			gotAfter := payloadsOf[events.ToolAfter](t, runEvents(cut.Events(), "run-1"), events.StageToolAfter)
			if len(gotAfter) != len(wantAfter) {
				t.Fatalf("resumed recorded %d tool.after, live %d", len(gotAfter), len(wantAfter))
			}
			for i := range wantAfter {
				if g, w := gotAfter[i].Result, wantAfter[i].Result; g.Content != w.Content || g.IsError != w.IsError || g.Mocked != w.Mocked {
					t.Fatalf("resumed result of %s: %+v\nlive: %+v", w.CallID, g, w)
				}
			}
		})
	}
}

// A Task call that the agent's approval policy holds for a human, whose
// worker stopped after its tool.before and before it asked: the resumed
// attempt asks, as the first would have, and the sub-agent does not run.
func TestResumedTaskCallAsksBeforeTheChildRuns(t *testing.T) {
	j := looptest.New()
	calc := &countingTool{name: "calculator", answer: "42"}
	helper, err := loop.New(loop.Config{Emitter: j, History: j, Tools: []loop.Tool{calc}, Model: scripted.New(nil)})
	if err != nil {
		t.Fatal(err)
	}
	team := loop.NewTeam()
	team.Add("helper", helper)
	need := loop.Approval{Required: func(c events.ToolCall) string {
		if c.Name == loop.TaskTool {
			return "delegation needs a human"
		}
		return ""
	}}
	planner := func(em loop.Emitter) *loop.Engine {
		e, err := loop.New(loop.Config{Emitter: em, History: j, Model: scripted.New(delegating), Approval: need, Queue: &queue{},
			Subagents: []loop.Subagent{{ID: "helper", Description: "does sums"}}, Team: team, MaxDepth: 2})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "planner", SessionID: "p1", Prompt: "go"}
	// intake, run.started, step.started, context.assembled, model.responded,
	// tool.before (Task) | approval.requested
	if res, err := planner(&failingEmitter{inner: j, limit: 6}).Run(ctxT(t), req); err == nil || res != nil && res.Ended {
		t.Fatalf("first attempt: %+v, %v; want it cut off", res, err)
	}
	res, err := planner(j).Run(ctxT(t), req)
	if err != nil || res.Reason != loop.ReasonWaiting || len(res.Waiting) != 1 || res.Waiting[0].Reason != "delegation needs a human" {
		t.Fatalf("resumed: %+v, %v; want it waiting for approval of the Task call", res, err)
	}
	if n := countStages(j.Events(), events.StageSubagentBefore); n != 0 || calc.calls.Load() != 0 {
		t.Fatalf("the sub-agent ran before its approval: %d subagent.before, calculator %d", n, calc.calls.Load())
	}
}
