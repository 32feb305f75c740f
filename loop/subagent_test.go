package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/loop/scripted"
)

// taskCall is a scripted Task call handing prompt to agent.
func taskCall(agent, prompt string) scripted.ToolCall {
	args, _ := json.Marshal(map[string]string{"description": "a task", "prompt": prompt, "subagent_type": agent})
	return scripted.ToolCall{Name: loop.TaskTool, Arguments: args}
}

// team builds a planner that calls helper, and helper, on one journal.
type teamSetup struct {
	j       *looptest.Journal
	team    *loop.Team
	planner *loop.Engine
	helper  *loop.Engine
	calc    *countingTool
}

func newTeam(t *testing.T, plannerScript *scripted.Script, hooks loop.Interception, helperEmitter loop.Emitter) *teamSetup {
	t.Helper()
	ts := &teamSetup{j: looptest.New(), team: loop.NewTeam(), calc: &countingTool{name: "calculator", answer: "42"}}
	em := loop.Emitter(ts.j)
	if helperEmitter != nil {
		em = helperEmitter
	}
	var err error
	ts.helper, err = loop.New(loop.Config{Emitter: em, History: ts.j, Hooks: hooks, Tools: []loop.Tool{ts.calc},
		Model: scripted.New(&scripted.Script{Replies: []scripted.Reply{
			{ToolCalls: []scripted.ToolCall{{Name: "calculator", Arguments: json.RawMessage(`{"expression":"6*7"}`)}}},
			{Content: "{{prompt}}: {{tool:calculator}}"},
		}})})
	if err != nil {
		t.Fatal(err)
	}
	ts.planner, err = loop.New(loop.Config{Emitter: ts.j, History: ts.j, Hooks: hooks, Model: scripted.New(plannerScript),
		Subagents: []loop.Subagent{{ID: "helper", Description: "does sums"}}, Team: ts.team, MaxDepth: 2})
	if err != nil {
		t.Fatal(err)
	}
	ts.team.Add("helper", ts.helper)
	ts.team.Add("planner", ts.planner)
	return ts
}

var delegating = &scripted.Script{Replies: []scripted.Reply{
	{Content: "Let me ask the helper.", ToolCalls: []scripted.ToolCall{taskCall("helper", "what is 6*7")}},
	{Content: "The helper says {{tool:Task}}"},
}}

// beforeCallAgent and afterCallAgent: the parent fires subagent.before, the
// child runs as a run of its own with the parent's lineage, every hook
// firing inside it, then subagent.after; the child's answer is the Task
// call's result, and its usage counts toward the parent's.
func TestSubagentCall(t *testing.T) {
	ts := newTeam(t, delegating, nil, nil)
	parent := &events.RunRequest{AgentID: "planner", SessionID: "p1", Prompt: "go"}
	res, err := ts.planner.Run(ctxT(t), parent)
	if err != nil || res.Reason != events.ReasonDone || res.Answer != "The helper says what is 6*7: 42" {
		t.Fatalf("parent: %+v, %v", res, err)
	}
	evs := ts.j.Events()
	before := payloadsOf[events.SubagentBefore](t, evs, events.StageSubagentBefore)
	after := payloadsOf[events.SubagentAfter](t, evs, events.StageSubagentAfter)
	if len(before) != 1 || before[0].AgentID != "helper" || before[0].Instruction != "what is 6*7" || before[0].Depth != 1 || before[0].RunID == "" {
		t.Fatalf("subagent.before %+v", before)
	}
	if len(after) != 1 || !after[0].Success || after[0].RunID != before[0].RunID || after[0].Answer != "what is 6*7: 42" || after[0].Usage.OutputTokens == 0 {
		t.Fatalf("subagent.after %+v", after)
	}
	child := runEvents(evs, before[0].RunID)
	if len(child) == 0 {
		t.Fatal("the child run recorded nothing")
	}
	for _, e := range child {
		if e.AgentID != "helper" || e.SessionID != before[0].SessionID || e.ParentRunID != res.RunID || e.ParentSessionID != "p1" || e.ParentAgentID != "planner" {
			t.Fatalf("child event %s: agent %s session %s, parent %s/%s/%s", e.Stage, e.AgentID, e.SessionID, e.ParentAgentID, e.ParentSessionID, e.ParentRunID)
		}
	}
	if res.Usage.OutputTokens <= after[0].Usage.OutputTokens {
		t.Fatalf("parent usage %+v does not count the child's %+v", res.Usage, after[0].Usage)
	}
	// The parent's events: tool.before(Task), subagent.before, ..., subagent.after, tool.after(Task).
	var order []events.Stage
	for _, e := range runEvents(evs, res.RunID) {
		switch e.Stage {
		case events.StageToolBefore, events.StageSubagentBefore, events.StageSubagentAfter, events.StageToolAfter:
			order = append(order, e.Stage)
		}
	}
	want := []events.Stage{events.StageToolBefore, events.StageSubagentBefore, events.StageSubagentAfter, events.StageToolAfter}
	if len(order) != len(want) {
		t.Fatalf("parent order %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("parent order %v, want %v", order, want)
		}
	}
}

// Hooks fire inside the child as in any run: one that denies the
// calculator for the helper agent denies it inside the child; one on
// subagent.before rewrites the instruction or denies the call.
func TestHooksInsideAndAroundTheChild(t *testing.T) {
	chain := interceptors.NewChain()
	register(t, chain, interceptors.Registration{Plugin: "no-maths-for-helpers", Stage: events.StageToolBefore, Tools: "calculator", Agents: "helper"},
		func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Deny, Reason: "helpers do not do maths"}, nil
		})
	register(t, chain, interceptors.Registration{Plugin: "polite", Stage: events.StageSubagentBefore},
		func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Modify, Patch: []interceptors.PatchOp{{Op: "replace", Path: "/instruction", Value: json.RawMessage(`"please: what is 6*7"`)}}}, nil
		})
	ts := newTeam(t, delegating, chain, nil)
	res, err := ts.planner.Run(ctxT(t), &events.RunRequest{AgentID: "planner", SessionID: "p1", Prompt: "go"})
	if err != nil || res.Answer != "The helper says please: what is 6*7: denied: no-maths-for-helpers: helpers do not do maths" {
		t.Fatalf("parent: %+v, %v", res, err)
	}
	if ts.calc.calls.Load() != 0 {
		t.Fatal("the calculator ran inside the child")
	}

	deny := interceptors.NewChain()
	register(t, deny, interceptors.Registration{Plugin: "gate", Stage: events.StageSubagentBefore},
		func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Deny, Reason: "no delegation today"}, nil
		})
	ts = newTeam(t, delegating, deny, nil)
	res, err = ts.planner.Run(ctxT(t), &events.RunRequest{AgentID: "planner", SessionID: "p1", Prompt: "go"})
	if err != nil || !strings.Contains(res.Answer, "error: denied: gate: no delegation today") {
		t.Fatalf("denied call: %+v, %v", res, err)
	}
	failed := payloadsOf[events.SubagentFailed](t, ts.j.Events(), events.StageSubagentFailed)
	if len(failed) != 1 || countStages(ts.j.Events(), events.StageSubagentAfter) != 0 {
		t.Fatalf("subagent.failed %+v", failed)
	}
}

// onCallAgentError: an agent the parent may not call, a child that fails,
// and a call past the depth limit are errors for the model, recorded.
func TestSubagentErrors(t *testing.T) {
	for _, tc := range []struct {
		name, agent, want string
	}{
		{"unknown agent", "stranger", `agent "stranger" is not one this agent may call`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := &scripted.Script{Replies: []scripted.Reply{
				{ToolCalls: []scripted.ToolCall{taskCall(tc.agent, "hi")}},
				{Content: "{{tool:Task}}"},
			}}
			ts := newTeam(t, script, nil, nil)
			res, err := ts.planner.Run(ctxT(t), &events.RunRequest{AgentID: "planner", SessionID: "p1", Prompt: "go"})
			if err != nil || !strings.Contains(res.Answer, tc.want) {
				t.Fatalf("%+v, %v", res, err)
			}
			if f := payloadsOf[events.SubagentFailed](t, ts.j.Events(), events.StageSubagentFailed); len(f) != 1 || !strings.Contains(f[0].Error, tc.want) {
				t.Fatalf("subagent.failed %+v", f)
			}
		})
	}

	// An agent that calls itself, past the depth limit (2).
	j := looptest.New()
	team := loop.NewTeam()
	self := &scripted.Script{Replies: []scripted.Reply{
		{ToolCalls: []scripted.ToolCall{taskCall("recursive", "again")}},
		{Content: "{{tool:Task}}"},
	}}
	eng, err := loop.New(loop.Config{Emitter: j, History: j, Model: scripted.New(self), Subagents: []loop.Subagent{{ID: "recursive"}}, Team: team, MaxDepth: 2})
	if err != nil {
		t.Fatal(err)
	}
	team.Add("recursive", eng)
	res, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "recursive", SessionID: "r", Prompt: "go"})
	if err != nil || !strings.Contains(res.Answer, "sub-agents nest at most 2 deep") {
		t.Fatalf("recursion: %+v, %v", res, err)
	}
	depths := map[int]bool{}
	for _, b := range payloadsOf[events.SubagentBefore](t, j.Events(), events.StageSubagentBefore) {
		depths[b.Depth] = true
	}
	if len(depths) != 2 || !depths[1] || !depths[2] {
		t.Fatalf("children at depths %v, want 1 and 2", depths)
	}

	// A child that fails: subagent.after says so, the parent goes on.
	failing := loop.NewTeam()
	broken, _ := loop.New(loop.Config{Emitter: j, History: j, Model: scripted.New(&scripted.Script{Replies: []scripted.Reply{{Error: "child model down"}}})})
	failing.Add("helper", broken)
	parent, _ := loop.New(loop.Config{Emitter: j, History: j, Model: scripted.New(delegating), Subagents: []loop.Subagent{{ID: "helper"}}, Team: failing})
	res, err = parent.Run(ctxT(t), &events.RunRequest{AgentID: "planner", SessionID: "p2", Prompt: "go"})
	if err != nil || res.Reason != events.ReasonDone || !strings.Contains(res.Answer, "error: ") {
		t.Fatalf("a failing child: %+v, %v", res, err)
	}
}

// A worker that stops while the child runs: resumed, the parent resumes
// the same child, which runs no recorded tool again, and the child is not
// run twice once it has ended.
func TestChildRunKilledMidwayIsResumed(t *testing.T) {
	ts := newTeam(t, delegating, nil, nil)
	// The child's appends fail after its tool.before: intake, run.started,
	// step.started, context.assembled, model.responded, tool.before.
	cut := &failingEmitter{inner: ts.j, limit: 6}
	helper, err := loop.New(loop.Config{Emitter: cut, History: ts.j, Tools: []loop.Tool{ts.calc},
		Model: scripted.New(&scripted.Script{Replies: []scripted.Reply{
			{ToolCalls: []scripted.ToolCall{{Name: "calculator", Arguments: json.RawMessage(`{"expression":"6*7"}`)}}},
			{Content: "{{prompt}}: {{tool:calculator}}"},
		}})})
	if err != nil {
		t.Fatal(err)
	}
	ts.team.Add("helper", helper)
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "planner", SessionID: "p1", Prompt: "go"}
	if _, err := ts.planner.Run(ctxT(t), req); !errors.Is(err, loop.ErrUnrecorded) {
		t.Fatalf("parent with its child cut: %v, want ErrUnrecorded", err)
	}
	if ts.calc.calls.Load() != 1 {
		t.Fatalf("the child's calculator ran %d times before the cut", ts.calc.calls.Load())
	}
	ts.team.Add("helper", ts.helper) // a healthy worker
	res, err := ts.planner.Run(ctxT(t), req)
	if err != nil || res.Reason != events.ReasonDone || !res.Resumed {
		t.Fatalf("resumed parent: %+v, %v", res, err)
	}
	evs := ts.j.Events()
	if n := countStages(evs, events.StageSubagentBefore); n != 1 {
		t.Fatalf("%d subagent.before: the resumed parent called a new child", n)
	}
	if ts.calc.calls.Load() != 1 {
		t.Fatalf("the calculator ran %d times: the resumed child ran it again (not idempotent: its outcome is unknown)", ts.calc.calls.Load())
	}
	failed := payloadsOf[events.ToolFailed](t, evs, events.StageToolFailed)
	if len(failed) != 1 || !failed[0].Unknown {
		t.Fatalf("the child's cut call: tool.failed %+v, want its outcome unknown", failed)
	}
	// Resuming again changes nothing: the parent ended.
	again, err := ts.planner.Run(ctxT(t), req)
	if err != nil || again.Answer != res.Answer || len(ts.j.Events()) != len(evs) {
		t.Fatalf("a third attempt: %+v, %v", again, err)
	}
}
