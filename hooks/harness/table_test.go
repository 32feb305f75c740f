package harness_test

import (
	"slices"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/harness"
)

func TestTable(t *testing.T) {
	tb := harness.Table{
		{Name: "Start", Stage: events.StageRunStarted},
		{Name: "Chunk"},
		{Name: "End", Stage: events.StageRunCompleted, Limit: 3 * time.Second},
	}
	if got := tb.Names(); !slices.Equal(got, []string{"Start", "Chunk", "End"}) {
		t.Errorf("Names: %v", got)
	}
	for name, want := range map[string]events.Stage{"Start": events.StageRunStarted, "Chunk": "", "End": events.StageRunCompleted, "Other": ""} {
		if got := tb.StageOf(name); got != want {
			t.Errorf("StageOf(%s) = %q, want %q", name, got, want)
		}
	}
	if got := tb.LimitOf("End", time.Minute); got != 3*time.Second {
		t.Errorf("LimitOf(End) = %v", got)
	}
	if got := tb.LimitOf("Start", time.Minute); got != time.Minute {
		t.Errorf("LimitOf(Start) = %v, want the default", got)
	}
}

func TestPromptAddition(t *testing.T) {
	for _, c := range []struct {
		orig, rewritten, added string
		replaced               bool
	}{
		{"fix the bug", "fix the bug", "", false},
		{"fix the bug", "fix the bug\n\nContext: the repo is Go.", "Context: the repo is Go.", false},
		{"fix the bug", "delete everything", "", true},
		{"fix the bug", "", "", true},
	} {
		added, replaced := harness.PromptAddition(c.orig, c.rewritten)
		if added != c.added || replaced != c.replaced {
			t.Errorf("PromptAddition(%q, %q) = %q, %v; want %q, %v", c.orig, c.rewritten, added, replaced, c.added, c.replaced)
		}
	}
}
