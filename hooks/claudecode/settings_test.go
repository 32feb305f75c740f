package claudecode_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/hooks/claudecode"
)

func TestParseSettings(t *testing.T) {
	s, err := claudecode.ParseSettings([]byte(`{
  "model": "sonnet",
  "permissions": {"allow": ["Bash(npm test)"]},
  "hooks": {
    "Stop": [{"hooks": [{"type": "prompt", "prompt": "done? $ARGUMENTS"}]}],
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [
        {"type": "command", "command": "$CLAUDE_PROJECT_DIR/.claude/hooks/guard.sh", "timeout": 30},
        {"type": "http", "url": "http://localhost:8080/hook"}
      ]},
      {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "./fmt.sh", "timeout": 1.5}]}
    ],
    "PermissionDenied": [{"hooks": [{"type": "command", "command": "x"}]}],
    "UserPromptSubmit": [{"matcher": "ignored", "hooks": [{"type": "agent", "prompt": "check"}]}]
  }
}`), ".claude/settings.json")
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		event         claudecode.HookEvent
		typ, matcher  string
		timeout       time.Duration
		where         string
		group, handle int
	}
	want := []row{
		{claudecode.UserPromptSubmit, "agent", "ignored", 60 * time.Second, ".claude/settings.json: hooks.UserPromptSubmit[0].hooks[0]", 0, 0},
		{claudecode.PreToolUse, "command", "Bash", 30 * time.Second, ".claude/settings.json: hooks.PreToolUse[0].hooks[0]", 0, 0},
		{claudecode.PreToolUse, "http", "Bash", 600 * time.Second, ".claude/settings.json: hooks.PreToolUse[0].hooks[1]", 0, 1},
		{claudecode.PreToolUse, "command", "Edit|Write", 1500 * time.Millisecond, ".claude/settings.json: hooks.PreToolUse[1].hooks[0]", 1, 0},
		{claudecode.Stop, "prompt", "", 30 * time.Second, ".claude/settings.json: hooks.Stop[0].hooks[0]", 0, 0},
	}
	if len(s.Handlers) != len(want) {
		t.Fatalf("%d handlers: %+v", len(s.Handlers), s.Handlers)
	}
	for i, w := range want {
		h := s.Handlers[i]
		if h.Event != w.event || h.Type != w.typ || h.Matcher != w.matcher || h.Timeout != w.timeout || h.Where != w.where || h.Group != w.group || h.Index != w.handle {
			t.Errorf("handler %d: %+v, want %+v", i, h, w)
		}
	}
	if !strings.Contains(string(s.Handlers[1].Raw), `"command": "$CLAUDE_PROJECT_DIR/.claude/hooks/guard.sh"`) {
		t.Errorf("raw handler %s", s.Handlers[1].Raw)
	}
	// UserPromptSubmit takes no matcher: Claude Code ignores it.
	if !s.Handlers[0].Compiled.Match("anything") {
		t.Error("UserPromptSubmit's matcher narrows it")
	}
	if len(s.Skipped) != 1 || !strings.Contains(s.Skipped[0], "hooks.PermissionDenied[0]: 1 hook(s) of PermissionDenied") {
		t.Errorf("skipped %q", s.Skipped)
	}
}

func TestParseSettingsErrors(t *testing.T) {
	for _, tc := range []struct{ file, err string }{
		{`{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x"}]}]`, "settings.json: line 1, column 75: unexpected end of JSON input"},
		{"{\n  \"hooks\": {\n    \"PreToolUse\": [}\n}", "line 3, column 20: invalid character '}'"},
		{`{"hooks": []}`, "hooks: expected an object of events"},
		{`{"hooks": {"PreTooluse": []}}`, `hooks.PreTooluse: not a Claude Code hook event (hookbus maps UserPromptSubmit, SessionStart, PreToolUse`},
		{`{"hooks": {"PreToolUse": {"matcher": "Bash"}}}`, "hooks.PreToolUse: expected a list of matcher groups"},
		{`{"hooks": {"PreToolUse": [{"matcher": "Bash"}]}}`, "hooks.PreToolUse[0]: no hooks"},
		{`{"hooks": {"PreToolUse": [{"matcher": 7, "hooks": []}]}}`, "hooks.PreToolUse[0]: expected {\"matcher\""},
		{`{"hooks": {"PreToolUse": [{"hooks": [{"command": "x"}]}]}}`, "hooks.PreToolUse[0].hooks[0]: no type"},
		{`{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": 0}]}]}}`, "hooks.PreToolUse[0].hooks[0]: timeout 0 is not a positive number of seconds"},
		{`{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": "30"}]}]}}`, "hooks.PreToolUse[0].hooks[0]: expected a handler object"},
		{`{"hooks": {"PreToolUse": [{"matcher": "(?<!x)Bash", "hooks": [{"type": "command", "command": "x"}]}]}}`, "hooks.PreToolUse[0].matcher: matcher \"(?<!x)Bash\" is a regular expression Go cannot compile"},
		{`{"hooks": {"PreToolUse": [{"matcher": "Edit||Write", "hooks": [{"type": "command", "command": "x"}]}]}}`, `matcher "Edit||Write" has an empty name`},
	} {
		_, err := claudecode.ParseSettings([]byte(tc.file), "")
		if !errors.Is(err, claudecode.ErrSettings) || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s:\n got %v\nwant %q", tc.file, err, tc.err)
		}
	}
	if _, err := claudecode.LoadSettings("/no/such/settings.json"); !errors.Is(err, claudecode.ErrSettings) {
		t.Errorf("missing file: %v", err)
	}
	s, err := claudecode.ParseSettings([]byte(`{"disableAllHooks": true, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}}`), "")
	if err != nil || !s.DisableAllHooks || len(s.Handlers) != 1 {
		t.Fatalf("disableAllHooks: %+v %v", s, err)
	}
	if s, err := claudecode.ParseSettings([]byte(`{"model": "opus"}`), ""); err != nil || len(s.Handlers) != 0 {
		t.Fatalf("no hooks: %+v %v", s, err)
	}
}

func TestMatcher(t *testing.T) {
	for _, tc := range []struct {
		matcher, tools string
		match, miss    []string
	}{
		{"", "", []string{"Bash", ""}, nil},
		{"*", "", []string{"Bash", "mcp__x__y"}, nil},
		{"Bash", "Bash", []string{"Bash"}, []string{"bash", "BashOutput"}},
		{"Edit|Write", "Edit|Write", []string{"Edit", "Write"}, []string{"MultiEdit", "Read"}},
		{"Edit,Write", "Edit|Write", []string{"Edit", "Write"}, []string{"Edit,Write"}},
		{"mcp__memory__create_entities", "mcp__memory__create_entities", []string{"mcp__memory__create_entities"}, []string{"mcp__memory__create"}},
		{"mcp__memory__.*", "re:mcp__memory__.*", []string{"mcp__memory__store", "x_mcp__memory__y"}, []string{"mcp__github__push"}},
		{"^Notebook", "re:^Notebook", []string{"NotebookEdit"}, []string{"ReadNotebook"}},
		{"Write.*", "re:Write.*", []string{"Write", "NotebookWrite", "TodoWrite"}, []string{"Read"}},
		{"startup", "startup", []string{"startup"}, []string{"resume"}},
	} {
		m, err := claudecode.ParseMatcher(tc.matcher)
		if err != nil {
			t.Fatalf("%q: %v", tc.matcher, err)
		}
		if m.Tools() != tc.tools {
			t.Errorf("%q: Tools() = %q, want %q", tc.matcher, m.Tools(), tc.tools)
		}
		for _, n := range tc.match {
			if !m.Match(n) {
				t.Errorf("%q does not match %q", tc.matcher, n)
			}
		}
		for _, n := range tc.miss {
			if m.Match(n) {
				t.Errorf("%q matches %q", tc.matcher, n)
			}
		}
	}
}
