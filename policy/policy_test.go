package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/policy"
)

// toolBefore is a tool.before event of harness h calling tool with args.
func toolBefore(t testing.TB, h events.Harness, agent, session, tool, args string) *events.Event {
	t.Helper()
	call := events.ToolCall{ID: "call_1_1", Name: tool, Arguments: json.RawMessage(args)}.WithAction(h)
	src := "hookbus/loop"
	switch h {
	case events.HarnessClaude:
		src = "hookbus/claude-code"
	case events.HarnessGemini:
		src = "hookbus/gemini-cli"
	case events.HarnessCodex:
		src = "hookbus/codex-cli"
	}
	ev, err := events.New(events.StageToolBefore, events.Meta{Source: src, AgentID: agent, SessionID: session,
		RunID: "run-" + events.NewID(), Step: 1}, events.ToolBefore{Call: call})
	if err != nil {
		t.Fatal(err)
	}
	ev.Subject = tool
	return ev
}

func compile(t testing.TB, src string, opts ...policy.Option) *policy.Compiled {
	t.Helper()
	ps, err := policy.Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	c, err := policy.Compile(ps[0], opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func evaluate(t testing.TB, c *policy.Compiled, ev *events.Event) *policy.Result {
	t.Helper()
	in, err := policy.InputFrom(ev, "")
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Evaluate(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

const noRM = `
name: no-rm
match:
  kinds: [shell]
validations:
- name: rm-rf
  expression: '!action.command.matches("rm\\s+-[a-zA-Z]*r[a-zA-Z]*f")'
  message: destructive shell command
`

func TestDenySimple(t *testing.T) {
	c := compile(t, noRM)
	res := evaluate(t, c, toolBefore(t, events.HarnessGemini, "a", "s1", "run_shell_command", `{"command":"rm -rf victim"}`))
	if res.Decision == nil || res.Decision.Kind != interceptors.Deny {
		t.Fatalf("decision = %+v, want deny", res.Decision)
	}
	if !strings.Contains(res.Decision.Reason, "destructive shell command") {
		t.Errorf("reason = %q", res.Decision.Reason)
	}
	h := res.Hit
	if h.Name != "no-rm" || h.Rule != "rm-rf" || h.Action != "deny" || !h.Enforced || !strings.HasPrefix(h.Version, "sha256:") {
		t.Errorf("hit = %+v", h)
	}
	if h.Values["action.command"] != `"rm -rf victim"` {
		t.Errorf("values = %v", h.Values)
	}
	if res.Decision.Policy != h {
		t.Error("the decision does not carry the hit")
	}
	res = evaluate(t, c, toolBefore(t, events.HarnessGemini, "a", "s1", "run_shell_command", `{"command":"ls"}`))
	if res.Decision == nil || res.Decision.Kind != interceptors.Allow || res.Hit.Action != "allow" {
		t.Fatalf("harmless: %+v", res.Decision)
	}
	res = evaluate(t, c, toolBefore(t, events.HarnessGemini, "a", "s1", "read_file", `{"absolute_path":"/x"}`))
	if res.Decision != nil || res.Hit != nil {
		t.Fatalf("unmatched kind: %+v", res)
	}
}

func TestCompileErrorPosition(t *testing.T) {
	src := "name: bad\nvalidations:\n- name: typo\n  expression: '!action.comand.contains(\"x\")'\n"
	ps, err := policy.Parse("bad.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	_, err = policy.Compile(ps[0])
	if !errors.Is(err, policy.ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
	if !strings.HasPrefix(err.Error(), "policy: invalid: bad.yaml:4:") {
		t.Errorf("err = %v", err)
	}
	t.Log(err)
}

var _ = time.Second
