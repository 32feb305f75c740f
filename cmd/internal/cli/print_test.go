package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
)

func timelineOf(t *testing.T, agent, session, run string) string {
	t.Helper()
	e, err := events.New(events.StageStepStarted, events.Meta{Source: "test", AgentID: agent, SessionID: session, RunID: run, Step: 1}, events.StepStarted{Step: 1})
	if err != nil {
		t.Fatal(err)
	}
	e.Time = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var b strings.Builder
	if err := PrintTimeline(&b, e); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The timeline shows a run id as a prefix that --run accepts, and quotes
// ids that would make agent/session ambiguous.
func TestPrintTimeline(t *testing.T) {
	run := "01KAB3C4D5E6F7G8H9J0K1M2N3"
	line := timelineOf(t, "demo", "s1", run)
	if !strings.Contains(line, " demo/s1 run 01KAB3C4D5E6…  #") {
		t.Fatalf("line %q", line)
	}
	if shown := run[:RunIDShown]; !strings.HasPrefix(run, shown) {
		t.Fatal("not a prefix")
	}
	if line := timelineOf(t, "a", "short-run", "r1"); !strings.Contains(line, " a/short-run run r1  #") {
		t.Fatalf("a short run id is shown whole: %q", line)
	}
	a := timelineOf(t, "a/b", "c", run)
	b := timelineOf(t, "a", "b/c", run)
	if !strings.Contains(a, ` "a/b"/c run`) || !strings.Contains(b, ` a/"b/c" run`) {
		t.Fatalf("ids with '/' are not told apart:\n%s%s", a, b)
	}
}
