package mcp_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
)

// An agent whose model calls two MCP tools, with a remote guard (a NATS
// service) that denies deletions on any MCP server: the allowed tool runs
// on the server and its result reaches the model; the denied one never
// reaches the server.
func TestEngineRunsMCPToolsUnderARemoteGuard(t *testing.T) {
	ctx := ctxT(t)
	b := bustest.StartBus(t)
	rec := &recorder{}
	s := connect(t, startHTTP(t, rec, "").config("files"))

	svc, err := remote.Serve(ctx, b.Conn(), remote.ServeConfig{Plugin: "guard", Stages: []events.Stage{events.StageToolBefore}},
		interceptors.Func(func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Deny, Reason: "no deletions via MCP"}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	chain := interceptors.NewChain()
	if _, err := remote.Register(b, chain, interceptors.Registration{Plugin: "guard", Stage: events.StageToolBefore, Tools: "mcp__*__delete*"}); err != nil {
		t.Fatal(err)
	}

	model := scripted.New(&scripted.Script{Replies: []scripted.Reply{
		{Content: "Let me look, then clean up.", ToolCalls: []scripted.ToolCall{
			{Name: "mcp__files__echo", Arguments: json.RawMessage(`{"text":"hello"}`)},
			{Name: "mcp__files__delete_file", Arguments: json.RawMessage(`{"path":"/etc/passwd"}`)},
		}},
		{Content: "echo: {{tool:mcp__files__echo}} | delete: {{tool:mcp__files__delete_file}}"},
	}})
	eng, err := loop.New(loop.Config{Emitter: b, History: b, Model: model, Tools: s.Tools(), Hooks: chain})
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.Run(ctx, &events.RunRequest{AgentID: "agent", SessionID: "s1", Prompt: "tidy up"})
	if err != nil || res.Reason != events.ReasonDone {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if !strings.Contains(res.Answer, "echo: echo: hello") || !strings.Contains(res.Answer, "no deletions via MCP") {
		t.Fatalf("answer %q", res.Answer)
	}
	if rec.count("echo") != 1 || rec.count("delete_file") != 0 {
		t.Fatalf("the server ran echo %d times and delete_file %d times", rec.count("echo"), rec.count("delete_file"))
	}

	var stages []events.Stage
	var toolEvents []string
	if _, err := b.Replay(ctx, bus.Filter{}, func(e *events.Event) error {
		stages = append(stages, e.Stage)
		if e.Stage == events.StageToolBefore || e.Stage == events.StageToolAfter {
			toolEvents = append(toolEvents, string(e.Stage)+" "+e.Subject)
		}
		if e.Stage == events.StageHookDecided {
			var d events.HookDecided
			if err := e.DecodeData(&d); err != nil {
				return err
			}
			toolEvents = append(toolEvents, "decided "+d.Plugin+" "+d.Decision)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []events.Stage{
		events.StageIntake, events.StageRunStarted,
		events.StageStepStarted, events.StageContextAssembled, events.StageModelResponded,
		events.StageToolBefore, events.StageToolAfter,
		events.StageHookDecided, events.StageToolBefore, events.StageToolAfter,
		events.StageStepCompleted,
		events.StageStepStarted, events.StageContextAssembled, events.StageModelResponded, events.StageStepCompleted,
		events.StageStop, events.StageRunCompleted,
	}
	if !slices.Equal(stages, want) {
		t.Fatalf("stages:\n got %v\nwant %v", stages, want)
	}
	wantTools := []string{
		"tool.before mcp__files__echo", "tool.after mcp__files__echo",
		"decided guard deny", "tool.before mcp__files__delete_file", "tool.after mcp__files__delete_file",
	}
	if !slices.Equal(toolEvents, wantTools) {
		t.Fatalf("tool events:\n got %v\nwant %v", toolEvents, wantTools)
	}
}
