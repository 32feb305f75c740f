package agents_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/agents"
	"github.com/hookbus/hookbus/hooks/claudecode"
)

func TestHooksSection(t *testing.T) {
	f, err := agents.Parse([]byte(`agents:
  - id: coder
    model: scripted:demo
    tools: [Bash]
    hooks:
      PreToolUse:
        - matcher: Bash
          hooks:
            - {type: command, command: ./hooks/guard.sh, timeout: 30}
            - type: http
              url: http://localhost:9/hook
      Stop:
        - hooks: [{type: command, command: "jq -r .last_assistant_message"}]
  - id: plain
    model: scripted:demo
`), "dir/agents.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := f.Agent("coder").Hooks.Settings
	if s == nil || len(s.Handlers) != 3 {
		t.Fatalf("hooks %+v", s)
	}
	h := s.Handlers[0]
	if h.Event != claudecode.PreToolUse || h.Type != "command" || h.Matcher != "Bash" || h.Timeout != 30*time.Second ||
		!strings.Contains(string(h.Raw), `"command":"./hooks/guard.sh"`) {
		t.Fatalf("first handler %+v", h)
	}
	if s.Handlers[1].Timeout != claudecode.DefaultHTTPTimeout || s.Handlers[2].Event != claudecode.Stop {
		t.Fatalf("handlers %+v", s.Handlers)
	}
	if f.Agent("plain").Hooks.Settings != nil {
		t.Fatal("an agent without hooks has some")
	}
	if got := f.Agent("coder").RootDir(); got != "dir" {
		t.Fatalf("RootDir %q", got)
	}
}

func TestHooksSectionErrors(t *testing.T) {
	for _, tc := range []struct{ hooks, err string }{
		{"      PreTooluse: []", "hooks section at line 5: hooks.PreTooluse: not a Claude Code hook event"},
		{"      PreToolUse: [{matcher: Bash}]", "hooks section at line 5: hooks.PreToolUse[0]: no hooks"},
		{"      PreToolUse: [{hooks: [{command: x}]}]", "hooks.PreToolUse[0].hooks[0]: no type"},
		{"      Stop: [{hooks: [{type: command, command: x, timeout: -1}]}]", "timeout -1 is not a positive number of seconds"},
	} {
		_, err := agents.Parse([]byte("agents:\n  - id: coder\n    model: scripted:demo\n    hooks:\n"+tc.hooks+"\n"), "agents.yaml")
		if !errors.Is(err, agents.ErrInvalid) || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "agents.yaml") {
			t.Errorf("%s:\n got %v\nwant %q", tc.hooks, err, tc.err)
		}
	}
}
