package agenthook_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/agenthook"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/loop/tools"
)

// TestChildRunOnTheBus: an agent run whose tool call an agent hook
// denies, on a real server. The hook's sub-agent run is in the stream as a
// child of the agent's run: an auditor goes from the agent's hook.decided
// to the child run and replays how it decided.
func TestChildRunOnTheBus(t *testing.T) {
	b := bustest.StartBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	verifier := scripted.New(&scripted.Script{Name: "verifier", Replies: []scripted.Reply{
		{Content: "Reading the policy.", ToolCalls: []scripted.ToolCall{{Name: "Read", Arguments: []byte(`{"file_path":"POLICY.md"}`)}}},
		{Content: `{"ok": false, "reason": "POLICY.md: deploys happen on weekdays only"}`},
	}})
	hook := newHook(t, agenthook.Config{Prompt: "Check this call against POLICY.md: $ARGUMENTS", Model: verifier,
		Emitter: b, History: b, Root: root(t), AgentID: "policy-agent"})
	chain := interceptors.NewChain()
	if _, err := chain.Register(interceptors.Registration{Plugin: "policy", Stage: events.StageToolBefore, Tools: "calculator", Timeout: 20 * time.Second}, hook); err != nil {
		t.Fatal(err)
	}
	agent := scripted.New(&scripted.Script{Name: "agent", Replies: []scripted.Reply{
		{ToolCalls: []scripted.ToolCall{{Name: "calculator", Arguments: []byte(`{"expression":"6*7"}`)}}},
		{Content: "Refused: {{tool:calculator}}"},
	}})
	eng, err := loop.New(loop.Config{Emitter: b, History: b, Model: agent, Tools: []loop.Tool{tools.Calculator()}, Hooks: chain})
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.Run(ctx, &events.RunRequest{AgentID: "deployer", SessionID: "s1", Prompt: "deploy"})
	if err != nil || res.Reason != events.ReasonDone {
		t.Fatalf("run: %+v, %v", res, err)
	}

	// The agent's record: the hook's decision names the child run.
	var decided *events.HookDecided
	if _, err := b.Replay(ctx, bus.Filter{Agent: "deployer", Session: "s1", Stages: []events.Stage{events.StageHookDecided}}, func(e *events.Event) error {
		decided = new(events.HookDecided)
		return e.DecodeData(decided)
	}); err != nil {
		t.Fatal(err)
	}
	if decided == nil || decided.Decision != "deny" || decided.Reason != "POLICY.md: deploys happen on weekdays only" {
		t.Fatalf("hook.decided %+v", decided)
	}
	child := decided.Annotations[agenthook.AnnotationRun]

	// The child run, replayed on its own: the agent's lineage on every
	// event, the file it read, its verdict, its end.
	var stages []events.Stage
	var answer string
	if _, err := b.Replay(ctx, bus.Filter{Agent: "policy-agent", Session: decided.Annotations[agenthook.AnnotationSession], Run: child}, func(e *events.Event) error {
		if e.ParentAgentID != "deployer" || e.ParentSessionID != "s1" || e.ParentRunID != res.RunID {
			t.Errorf("child event %s lineage %s/%s/%s, want deployer/s1/%s", e.Stage, e.ParentAgentID, e.ParentSessionID, e.ParentRunID, res.RunID)
		}
		stages = append(stages, e.Stage)
		if e.Stage == events.StageRunCompleted {
			var rc events.RunCompleted
			if err := e.DecodeData(&rc); err != nil {
				return err
			}
			answer = rc.Answer
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(stages) == 0 || stages[0] != events.StageIntake || stages[len(stages)-1] != events.StageRunCompleted ||
		answer != `{"ok": false, "reason": "POLICY.md: deploys happen on weekdays only"}` {
		t.Fatalf("child run stages %v, answer %q", stages, answer)
	}
	var readPolicy bool
	for _, s := range stages {
		readPolicy = readPolicy || s == events.StageToolAfter
	}
	if !readPolicy {
		t.Fatalf("the child run read nothing: %v", stages)
	}
}
