package scripted_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/loop/scripted"
)

func TestParseScript(t *testing.T) {
	s, err := scripted.Parse([]byte(`[{"content":"a","tool_calls":[{"name":"clock"}]},{"content":"b"}]`))
	if err != nil || len(s.Replies) != 2 || s.Replies[0].ToolCalls[0].Name != "clock" {
		t.Fatalf("ParseScript list = %+v, %v", s, err)
	}
	s, err = scripted.Parse([]byte(`{"name":"x","replies":[{"content":"a"}]}`))
	if err != nil || s.Name != "x" {
		t.Fatalf("ParseScript object = %+v, %v", s, err)
	}
	for _, bad := range []string{``, `[]`, `{"replies":[]}`, `{"replies":[{"tool_calls":[{}]}]}`, `{"replys":[]}`, `[{"tool_calls":[{"name":"x","arguments":"{"}]}]`} {
		if _, err := scripted.Parse([]byte(bad)); !errors.Is(err, scripted.ErrBadScript) {
			t.Errorf("ParseScript(%q) = %v, want ErrBadScript", bad, err)
		}
	}
}

// A mistake in a script is refused with what is wrong and where.
func TestParseScriptErrors(t *testing.T) {
	for _, tc := range []struct{ script, want string }{
		{``, "empty"},
		{`"hi"`, "expected a list of replies or an object, got a string"},
		{`[{"contnet": "hi"}]`, `reply 1: unknown field "contnet" (a reply has content, tool_calls, error, delay_ms)`},
		{`{"replies": [{"content": "a"}, {"content": "b", "delay": 5}]}`, `reply 2: unknown field "delay"`},
		{`{"name": "x", "replys": []}`, `unknown field "replys" (a script object has name and replies)`},
		{`{"content": "hi"}`, `unknown field "content" (a script object has name and replies)`},
		{`{"replies": {"content": "hi"}}`, "replies: expected a list of replies, got an object"},
		{`{"replies": [{"tool_calls": {"name": "clock"}}]}`, "reply 1: tool_calls: expected a list of tool calls, got an object"},
		{`[{"tool_calls": [{"name": "clock", "args": {}}]}]`, `reply 1: tool call 1: unknown field "args" (a tool call has name and arguments)`},
		{`[{"tool_calls": [{"name": "x", "arguments": "{}"}]}]`, "tool call 1: arguments: expected a JSON object, got a string"},
		{`[{"tool_calls": ["clock"]}]`, "tool call 1: expected an object, got a string"},
		{`[{"content": 5}]`, "reply 1: content: expected a string, got a number"},
		{`[{"delay_ms": "10"}]`, "reply 1: delay_ms: expected a number of milliseconds, got a string"},
		{`[{"delay_ms": -1}]`, "reply 1: delay_ms -1 is negative"},
		{`["hi"]`, "reply 1: expected an object, got a string"},
		{`{"name": 3, "replies": [{}]}`, "name: expected a string, got a number"},
		{`[{"content": "a"}`, "bad script"},
	} {
		_, err := scripted.Parse([]byte(tc.script))
		if !errors.Is(err, scripted.ErrBadScript) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%s) = %v; want ErrBadScript saying %q", tc.script, err, tc.want)
		}
	}
	// Every documented field parses.
	s, err := scripted.Parse([]byte(`{"name": "doc", "replies": [
		{"content": "thinking", "delay_ms": 250, "tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]},
		{"error": "the model is down"},
		{"content": "{{messages}} messages, {{tool:calculator}}, {{prompt}}"}]}`))
	if err != nil || s.Name != "doc" || len(s.Replies) != 3 || s.Replies[0].DelayMS != 250 || s.Replies[1].Error != "the model is down" ||
		string(s.Replies[0].ToolCalls[0].Arguments) != `{"expression": "6*7"}` {
		t.Fatalf("Parse of every field = %+v, %v", s, err)
	}
}
