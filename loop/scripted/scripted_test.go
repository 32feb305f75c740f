package scripted_test

import (
	"errors"
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
