package agenthook_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/agenthook"
	"github.com/hookbus/hookbus/hooks/prompt"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/loop/scripted"
)

func TestReadOnlyToolsOnly(t *testing.T) {
	j, dir := looptest.New(), root(t)
	base := agenthook.Config{Prompt: "x", Model: scripted.New(nil), Emitter: j, History: j, Root: dir}
	for _, names := range [][]string{{"Read", "Bash"}, {"Write"}, {"Edit", "Grep"}, {"Task"}, {"mcp__github__create_issue"}, {"Fetch"}} {
		cfg := base
		cfg.Tools = names
		_, err := agenthook.New(cfg)
		if !errors.Is(err, agenthook.ErrWriteTool) || !errors.Is(err, agenthook.ErrInvalidConfig) {
			t.Errorf("tools %v: New = %v, want ErrWriteTool", names, err)
		}
	}
	// The default tools are Claude Code's read-only ones, and the model is
	// offered those and nothing else.
	m := &model{fn: func(context.Context, *loop.ModelRequest) (*loop.ModelResponse, error) {
		return answer(`{"ok": true}`), nil
	}}
	cfg := base
	cfg.Model = m
	run(t, interceptors.Registration{}, newHook(t, cfg), parentEvent(t, "Bash", `{"command":"make deploy"}`))
	var offered []string
	for _, s := range m.requests()[0].Tools {
		offered = append(offered, s.Name)
	}
	if !slices.Equal(offered, []string{"Read", "Glob", "Grep"}) {
		t.Fatalf("tools offered %v, want [Read Glob Grep]", offered)
	}
	// The file tools need a root.
	cfg.Root = ""
	if _, err := agenthook.New(cfg); !errors.Is(err, agenthook.ErrInvalidConfig) {
		t.Fatalf("New without a root = %v", err)
	}
}

func TestAskingForBashIsAnUnknownTool(t *testing.T) {
	j := looptest.New()
	sneaky := scripted.New(&scripted.Script{Name: "sneaky", Replies: []scripted.Reply{
		{Content: "Let me just check.", ToolCalls: []scripted.ToolCall{{Name: "Bash", Arguments: []byte(`{"command":"rm -rf /srv"}`)}}},
		{Content: `{"ok": false, "reason": "could not verify the deploy without a shell"}`},
	}})
	h := newHook(t, agenthook.Config{Prompt: "Verify: $ARGUMENTS", Model: sneaky, Emitter: j, History: j, Root: root(t)})
	out := run(t, interceptors.Registration{}, h, parentEvent(t, "Bash", `{"command":"make deploy"}`))
	if out.Decision != interceptors.Deny || out.Reason != "could not verify the deploy without a shell" {
		t.Fatalf("decision %s %q (failure %+v)", out.Decision, out.Reason, out.Records[0].Failure)
	}
	child := childRun(j, out.Records[0].Annotations[agenthook.AnnotationRun])
	var failed *events.ToolFailed
	for _, e := range child {
		if e.Stage == events.StageToolFailed {
			failed = new(events.ToolFailed)
			if err := e.DecodeData(failed); err != nil {
				t.Fatal(err)
			}
		}
		if e.Stage == events.StageToolAfter {
			var ta events.ToolAfter
			if err := e.DecodeData(&ta); err != nil || !ta.Result.IsError || !strings.Contains(ta.Result.Content, "unknown tool") {
				t.Fatalf("Bash had a result other than the unknown-tool error: %s", e.Data)
			}
		}
	}
	if failed == nil || failed.Call.Name != "Bash" || !strings.Contains(failed.Error, loop.ErrUnknownTool.Error()) {
		t.Fatalf("tool.failed %+v", failed)
	}
	// The model was told so.
	var told bool
	for _, m := range lastContext(t, child) {
		told = told || m.Role == events.RoleTool && strings.Contains(m.Content, "unknown tool")
	}
	if !told {
		t.Fatal("the model was not told that Bash is an unknown tool")
	}
}

func TestAllowAndDeny(t *testing.T) {
	for _, tc := range []struct {
		name, verdict string
		kind          interceptors.Kind
		reason        string
	}{
		{"allow", `{"ok": true, "reason": "weekday deploy"}`, interceptors.Allow, "weekday deploy"},
		{"deny", "The policy says weekdays only.\n```json\n{\"ok\": false, \"reason\": \"deploys happen on weekdays only\"}\n```", interceptors.Deny, "deploys happen on weekdays only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := looptest.New()
			checker := scripted.New(&scripted.Script{Name: "checker", Replies: []scripted.Reply{
				{Content: "Reading the policy.", ToolCalls: []scripted.ToolCall{{Name: "Read", Arguments: []byte(`{"file_path":"POLICY.md"}`)}}},
				{Content: tc.verdict},
			}})
			h := newHook(t, agenthook.Config{Prompt: "Check the deploy against POLICY.md: $ARGUMENTS", Model: checker, ModelName: "scripted:checker",
				Emitter: j, History: j, Root: root(t)})
			parent := parentEvent(t, "Bash", `{"command":"make deploy"}`)
			out := run(t, interceptors.Registration{Plugin: "deploy-policy"}, h, parent)
			if out.Decision != tc.kind || out.Records[0].Reason != tc.reason {
				t.Fatalf("decision %s %q (failure %+v)", out.Decision, out.Reason, out.Records[0].Failure)
			}
			d := out.Records[0].HookDecided()
			id := d.Annotations[agenthook.AnnotationRun]
			if id == "" || d.Annotations[agenthook.AnnotationAgent] != "deploy-policy" || d.Annotations[agenthook.AnnotationSession] != id ||
				d.Annotations[prompt.AnnotationModel] != "scripted:checker" {
				t.Fatalf("hook.decided annotations %v", d.Annotations)
			}
			// The child run: its own session, the lineage of the run it
			// decided on, the file it read, and its end.
			child := childRun(j, id)
			if len(child) == 0 {
				t.Fatal("no child run recorded")
			}
			var read bool
			for _, e := range child {
				if e.AgentID != "deploy-policy" || e.SessionID != id || e.SessionID == parent.SessionID ||
					e.ParentAgentID != "deployer" || e.ParentSessionID != "s1" || e.ParentRunID != parent.RunID || e.Source != agenthook.DefaultSource {
					t.Fatalf("child event %s: agent %s session %s parent %s/%s/%s", e.Stage, e.AgentID, e.SessionID, e.ParentAgentID, e.ParentSessionID, e.ParentRunID)
				}
				if e.Stage == events.StageToolAfter && strings.Contains(string(e.Data), "weekdays only") {
					read = true
				}
			}
			var in events.Intake
			if err := child[0].DecodeData(&in); err != nil || child[0].Stage != events.StageIntake ||
				in.Metadata[agenthook.MetaEventID] != parent.ID || in.Metadata[agenthook.MetaPlugin] != "deploy-policy" ||
				!strings.Contains(in.Prompt, `"command":"make deploy"`) {
				t.Fatalf("child intake %s %s", child[0].Stage, child[0].Data)
			}
			end := terminal(child)
			var rc events.RunCompleted
			if !read || end == nil || end.Stage != events.StageRunCompleted || end.DecodeData(&rc) != nil || rc.Reason != events.ReasonDone {
				t.Fatalf("read the policy: %v; end %+v %s", read, end, rc.Reason)
			}
		})
	}
}

func TestNoVerdictFailsOpen(t *testing.T) {
	j := looptest.New()
	chatty := scripted.New(&scripted.Script{Replies: []scripted.Reply{{Content: "Looks fine to me!"}}})
	h := newHook(t, agenthook.Config{Prompt: "$ARGUMENTS", Model: chatty, Emitter: j, History: j, Root: root(t)})
	out := run(t, interceptors.Registration{}, h, parentEvent(t, "Bash", `{}`))
	f := out.Records[0].Failure
	if out.Decision != interceptors.Allow || f == nil || f.Kind != events.FailBadReply || f.Outcome != interceptors.FailedOpen || !errors.Is(f.Err, prompt.ErrNoVerdict) {
		t.Fatalf("decision %s, failure %+v", out.Decision, f)
	}
}

func TestModelErrorAndMaxTurnsFailOpen(t *testing.T) {
	j := looptest.New()
	broken := scripted.New(&scripted.Script{Replies: []scripted.Reply{{Error: "401 invalid x-api-key"}}})
	h := newHook(t, agenthook.Config{Prompt: "$ARGUMENTS", Model: broken, Emitter: j, History: j, Root: root(t)})
	out := run(t, interceptors.Registration{}, h, parentEvent(t, "Bash", `{}`))
	f := out.Records[0].Failure
	if out.Decision != interceptors.Allow || f == nil || f.Kind != events.FailError || !strings.Contains(f.Err.Error(), "401 invalid x-api-key") {
		t.Fatalf("model error: decision %s, failure %+v", out.Decision, f)
	}

	looping := scripted.New(&scripted.Script{Replies: []scripted.Reply{
		{ToolCalls: []scripted.ToolCall{{Name: "Glob", Arguments: []byte(`{"pattern":"*"}`)}}},
		{ToolCalls: []scripted.ToolCall{{Name: "Glob", Arguments: []byte(`{"pattern":"*"}`)}}},
		{ToolCalls: []scripted.ToolCall{{Name: "Glob", Arguments: []byte(`{"pattern":"*"}`)}}},
	}})
	h = newHook(t, agenthook.Config{Prompt: "$ARGUMENTS", Model: looping, Emitter: j, History: j, Root: root(t), MaxTurns: 2})
	out = run(t, interceptors.Registration{}, h, parentEvent(t, "Bash", `{}`))
	f = out.Records[0].Failure
	if f == nil || f.Kind != events.FailError || !strings.Contains(f.Err.Error(), "ended max_steps") {
		t.Fatalf("max turns: failure %+v", f)
	}
}

// blocking is a model that answers only when its ctx ends.
func blocking() *model {
	return &model{fn: func(ctx context.Context, _ *loop.ModelRequest) (*loop.ModelResponse, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}
}

func TestTimesOut(t *testing.T) {
	j := looptest.New()
	h := newHook(t, agenthook.Config{Prompt: "$ARGUMENTS", Model: blocking(), Emitter: j, History: j, Root: root(t), Timeout: 100 * time.Millisecond})
	out := run(t, interceptors.Registration{Timeout: 10 * time.Second}, h, parentEvent(t, "Bash", `{}`))
	f := out.Records[0].Failure
	if out.Decision != interceptors.Allow || f == nil || f.Kind != events.FailTimeout || f.Outcome != interceptors.FailedOpen ||
		!strings.Contains(f.Err.Error(), "gave no verdict within 100ms") {
		t.Fatalf("decision %s, failure %+v", out.Decision, f)
	}
	// The child run ended, and says why.
	var child string
	for _, e := range j.Events() {
		if e.Stage == events.StageIntake {
			child = e.RunID
		}
	}
	end := terminal(childRun(j, child))
	var rc events.RunCompleted
	if end == nil || end.Stage != events.StageRunCompleted || end.DecodeData(&rc) != nil || rc.Reason != events.ReasonInterrupted {
		t.Fatalf("child run end %+v (%+v)", end, rc)
	}
}

// TestCleansUp: after calls that answer, time out (the hook's timeout, and
// the chain's, shorter) or fail, no goroutine is left and every child run
// has ended.
func TestCleansUp(t *testing.T) {
	j := looptest.New()
	ok := scripted.New(&scripted.Script{Replies: []scripted.Reply{{Content: `{"ok": true}`}}})
	hooks := []struct {
		h   *agenthook.Hook
		reg interceptors.Registration
	}{
		{newHook(t, agenthook.Config{Prompt: "$ARGUMENTS", Model: ok, Emitter: j, History: j, Root: root(t)}), interceptors.Registration{}},
		{newHook(t, agenthook.Config{Prompt: "$ARGUMENTS", Model: blocking(), Emitter: j, History: j, Root: root(t), Timeout: 50 * time.Millisecond}), interceptors.Registration{Timeout: 5 * time.Second}},
		{newHook(t, agenthook.Config{Prompt: "$ARGUMENTS", Model: blocking(), Emitter: j, History: j, Root: root(t)}), interceptors.Registration{Timeout: 50 * time.Millisecond}},
		{newHook(t, agenthook.Config{Prompt: "$ARGUMENTS", Model: &model{fn: func(context.Context, *loop.ModelRequest) (*loop.ModelResponse, error) {
			panic("model bug")
		}}, Emitter: j, History: j, Root: root(t)}), interceptors.Registration{}},
	}
	runtime.GC()
	before := runtime.NumGoroutine()
	for _, hk := range hooks {
		run(t, hk.reg, hk.h, parentEvent(t, "Bash", `{}`))
	}
	// The chain's idle workers wait in a pool until a collection drops
	// them: collect while waiting, so only a goroutine left running counts.
	bustest.Eventuallyf(t, 10*time.Second, func() bool { runtime.GC(); return runtime.NumGoroutine() <= before },
		"goroutines back to %d (now %d)", before, runtime.NumGoroutine())
	runs := map[string]bool{}
	for _, e := range j.Events() {
		runs[e.RunID] = runs[e.RunID] || e.Stage == events.StageRunCompleted || e.Stage == events.StageRunFailed
	}
	if len(runs) != len(hooks) {
		t.Fatalf("%d child runs, want %d", len(runs), len(hooks))
	}
	for id, ended := range runs {
		if !ended {
			t.Errorf("child run %s has not ended", id)
		}
	}
}
