package prompt_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/prompt"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
)

func newHook(t *testing.T, cfg prompt.Config) *prompt.Hook {
	t.Helper()
	h, err := prompt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestFormatsThePrompt(t *testing.T) {
	ev := bashCall(t, "call_2_1", "rm -rf /tmp/build")
	want, err := prompt.EventInput(ev)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, template, want string }{
		{"substituted", "Is this safe? $ARGUMENTS Answer in JSON.", "Is this safe? " + string(want) + " Answer in JSON."},
		{"substituted twice", "$ARGUMENTS\n---\n$ARGUMENTS", string(want) + "\n---\n" + string(want)},
		{"appended", "Deny anything touching /etc.", "Deny anything touching /etc.\n\n" + string(want)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := replies(`{"ok": true}`)
			run(t, interceptors.Registration{}, newHook(t, prompt.Config{Prompt: tc.template, Model: m}), ev)
			if got := m.userMessage(t, 0); got != tc.want {
				t.Fatalf("the model was asked\n%s\nwant\n%s", got, tc.want)
			}
			if sys := m.asked[0].Messages[0]; sys.Role != events.RoleSystem || sys.Content != prompt.DefaultSystem {
				t.Fatalf("first message %+v, want the default system prompt", sys)
			}
		})
	}
	// The JSON carries the payload and the event's attributes.
	var in prompt.Input
	if err := json.Unmarshal(want, &in); err != nil {
		t.Fatal(err)
	}
	if in.HookEventName != "tool.before" || in.AgentID != "ops" || in.SessionID != "s1" || in.RunID != ev.RunID ||
		in.EventID != ev.ID || in.Step != 2 || in.Subject != "Bash" || !strings.Contains(string(in.Data), `"command":"rm -rf /tmp/build"`) {
		t.Fatalf("input %s", want)
	}
}

func TestCustomInput(t *testing.T) {
	m := replies(`{"ok": true}`)
	h := newHook(t, prompt.Config{Prompt: "check $ARGUMENTS", Model: m, Input: func(ev *events.Event) (json.RawMessage, error) {
		return json.RawMessage(`{"hook_event_name":"PreToolUse","tool_name":"` + ev.Subject + `"}`), nil
	}})
	run(t, interceptors.Registration{}, h, bashCall(t, "c1", "ls"))
	if got := m.userMessage(t, 0); got != `check {"hook_event_name":"PreToolUse","tool_name":"Bash"}` {
		t.Fatalf("asked %q", got)
	}
}

func TestAllows(t *testing.T) {
	h := newHook(t, prompt.Config{Prompt: "Is it safe? $ARGUMENTS", Model: replies("```json\n{\"ok\": true, \"reason\": \"read-only\"}\n```"), ModelName: "haiku"})
	out := run(t, interceptors.Registration{}, h, bashCall(t, "c1", "ls -la"))
	if out.Decision != interceptors.Allow || out.Records[0].Failure != nil {
		t.Fatalf("decision %s, failure %+v", out.Decision, out.Records[0].Failure)
	}
	d := out.Records[0].HookDecided()
	if d.Decision != "allow" || d.Reason != "read-only" || d.Annotations[prompt.AnnotationModel] != "test-model" || d.Annotations[prompt.AnnotationCache] != "" {
		t.Fatalf("hook.decided %+v", d)
	}
}

func TestDeniesWithTheReason(t *testing.T) {
	h := newHook(t, prompt.Config{Prompt: "Is it safe? $ARGUMENTS", Model: replies(`I checked. {"ok": false, "reason": "deletes the build cache of every job"}`)})
	var after int
	c := interceptors.NewChain()
	c.Register(interceptors.Registration{Plugin: "judge", Stage: events.StageToolBefore}, h)
	c.Register(interceptors.Registration{Plugin: "after", Stage: events.StageToolBefore}, interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		after++
		return nil, nil
	}))
	out, err := c.Run(context.Background(), bashCall(t, "c1", "rm -rf /var/cache/build"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Decision != interceptors.Deny || out.Reason != "deletes the build cache of every job" || out.Plugin != "judge" || after != 0 {
		t.Fatalf("decision %s %q by %s (later hooks ran %d times)", out.Decision, out.Reason, out.Plugin, after)
	}
	if d := out.Records[0].HookDecided(); d.Decision != "deny" || d.Reason != "deletes the build cache of every job" {
		t.Fatalf("hook.decided %+v", d)
	}
}

func TestStopStageContinues(t *testing.T) {
	h := newHook(t, prompt.Config{Prompt: "Did the agent run the tests? $ARGUMENTS", Model: replies(`{"ok": false, "reason": "run go test ./... first"}`)})
	out := run(t, interceptors.Registration{}, h, event(t, events.StageStop, "", events.Stop{Reason: "done", Answer: "fixed it"}))
	if out.Decision != interceptors.Continue || len(out.Context) != 1 || out.Context[0] != "run go test ./... first" {
		t.Fatalf("decision %s, context %q", out.Decision, out.Context)
	}
}

func TestToolAfterGivesTheReasonToTheModel(t *testing.T) {
	h := newHook(t, prompt.Config{Prompt: "Did the edit keep the tests green? $ARGUMENTS", Model: replies(`{"ok": false, "reason": "the edit broke the build"}`)})
	out := run(t, interceptors.Registration{}, h, event(t, events.StageToolAfter, "Edit", events.ToolAfter{
		Call: events.ToolCall{ID: "c1", Name: "Edit"}, Result: events.ToolResult{CallID: "c1", Name: "Edit", Content: "ok"},
	}))
	if out.Decision != interceptors.Allow || len(out.Context) != 1 || out.Context[0] != "the edit broke the build" {
		t.Fatalf("decision %s, context %q", out.Decision, out.Context)
	}
}

func TestTimesOutFailOpen(t *testing.T) {
	slow := &model{fn: func(ctx context.Context, _ *loop.ModelRequest) (string, error) {
		<-ctx.Done() // a model that answers only when it is given up on
		return "", ctx.Err()
	}}
	h := newHook(t, prompt.Config{Prompt: "$ARGUMENTS", Model: slow, Timeout: 50 * time.Millisecond})
	out := run(t, interceptors.Registration{Timeout: 10 * time.Second}, h, bashCall(t, "c1", "ls"))
	f := out.Records[0].Failure
	if out.Decision != interceptors.Allow || f == nil || f.Kind != events.FailTimeout || f.Outcome != interceptors.FailedOpen ||
		!errors.Is(f.Err, interceptors.ErrTimeout) || !strings.Contains(f.Err.Error(), "no answer from the model within 50ms") {
		t.Fatalf("decision %s, failure %+v", out.Decision, f)
	}
	if st, _ := out.Records[0].Audit(); st != events.StageHookFailed {
		t.Fatalf("recorded as %s, want hook.failed", st)
	}
	// Fail-closed, the same timeout denies.
	out = run(t, interceptors.Registration{Timeout: 10 * time.Second, Policy: interceptors.PolicyFail}, h, bashCall(t, "c1", "ls"))
	if out.Decision != interceptors.Deny || out.Records[0].Failure.Outcome != interceptors.FailedClosed {
		t.Fatalf("fail-closed: decision %s, failure %+v", out.Decision, out.Records[0].Failure)
	}
}

func TestModelErrorFailsOpen(t *testing.T) {
	// A scripted model that fails, as a provider's outage does.
	broken := scripted.New(&scripted.Script{Replies: []scripted.Reply{{Error: "503 overloaded"}}})
	h := newHook(t, prompt.Config{Prompt: "$ARGUMENTS", Model: broken})
	out := run(t, interceptors.Registration{}, h, bashCall(t, "c1", "ls"))
	f := out.Records[0].Failure
	if out.Decision != interceptors.Allow || f == nil || f.Kind != events.FailError || f.Outcome != interceptors.FailedOpen ||
		!strings.Contains(out.Records[0].HookFailed().Error, "503 overloaded") {
		t.Fatalf("decision %s, failure %+v", out.Decision, f)
	}
}

func TestUnparsableReplyFailsOpen(t *testing.T) {
	h := newHook(t, prompt.Config{Prompt: "$ARGUMENTS", Model: replies("Sure, that command looks fine.")})
	out := run(t, interceptors.Registration{}, h, bashCall(t, "c1", "ls"))
	f := out.Records[0].Failure
	if out.Decision != interceptors.Allow || f == nil || f.Kind != events.FailBadReply || f.Outcome != interceptors.FailedOpen ||
		!errors.Is(f.Err, prompt.ErrNoVerdict) {
		t.Fatalf("decision %s, failure %+v", out.Decision, f)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	m := replies(`{"ok":true}`)
	for _, cfg := range []prompt.Config{
		{Model: m},
		{Prompt: "x"},
		{Prompt: "x", Model: m, Timeout: -time.Second},
		{Prompt: "x", Model: m, CacheTTL: 500 * time.Millisecond},
	} {
		if _, err := prompt.New(cfg); !errors.Is(err, prompt.ErrInvalidConfig) {
			t.Errorf("New(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
	h := newHook(t, prompt.Config{Prompt: "x", Model: m})
	if h.Timeout() != prompt.DefaultTimeout || prompt.DefaultTimeout != 30*time.Second {
		t.Errorf("default timeout %s", h.Timeout())
	}
}
