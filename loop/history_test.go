package loop_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
)

// Recorded histories, as Temporal's replay tests: real runs' event
// streams, recorded once (TestRecordHistories) into testdata/histories,
// and replayed by every test run. The replay rebuilds each history
// (loop.RebuildSession), asks the engine for each run it holds
// (Engine.Run: an ended run returns its recorded result; the run a history
// leaves unfinished is resumed, with a model and tools that record what
// they are asked) and compares what it sees with the history's expected
// file. A rebuild that reads an old history differently fails with
// errHistoryMismatch. The format: testdata/histories/README.md.

// errHistoryMismatch is the error of a recorded history that the engine
// reads differently from its expected file; the message names the history
// and each field that differs.
var errHistoryMismatch = errors.New("recorded history read differently")

// errBadHistory is the error of a recorded history, or its expected file,
// that cannot be read.
var errBadHistory = errors.New("recorded history unreadable")

const (
	historiesDir = "testdata/histories"
	eventsExt    = ".events.jsonl"
	expectedExt  = ".expected.json"
)

func historyPath(name, ext string) string { return filepath.Join(historiesDir, name+ext) }

func TestRecordedHistories(t *testing.T) {
	scs := historyScenarios()
	files, err := filepath.Glob(filepath.Join(historiesDir, "*"+eventsExt))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), eventsExt)
		if !slices.ContainsFunc(scs, func(sc *historyScenario) bool { return sc.name == name }) {
			t.Errorf("%s has no scenario in history_scenarios_test.go: the replay cannot resume it", f)
		}
	}
	for _, sc := range scs {
		t.Run(sc.name, func(t *testing.T) {
			if err := checkHistory(t, sc); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A rebuild that reads a recorded history differently fails with
// errHistoryMismatch, naming the history and what differs.
func TestRecordedHistoryMismatchIsNamed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		history string
		// alter changes the expected file or the history before the replay.
		alter func(want *observation, evs []*events.Event) []*events.Event
		field string // what the error must name
	}{
		{"a message of the session", "plain", func(w *observation, evs []*events.Event) []*events.Event {
			w.Rebuilt.Messages[1].Content = "something else"
			return evs
		}, "rebuilt.messages[1].content"},
		{"what the resume does with a call", "outcome-unknown", func(w *observation, evs []*events.Event) []*events.Event {
			w.Resume.Calls[1].Action = "run_again"
			return evs
		}, "resume.calls[1].action"},
		{"where the unfinished run is", "outcome-unknown", func(w *observation, evs []*events.Event) []*events.Event {
			w.Resume.LastSeq++
			return evs
		}, "resume.last_seq"},
		{"an event read differently", "plain", func(_ *observation, evs []*events.Event) []*events.Event {
			i := slices.IndexFunc(evs, func(e *events.Event) bool { return e.Stage == events.StageToolAfter })
			return slices.Delete(slices.Clone(evs), i, i+1)
		}, "rebuilt.messages"},
		{"a call still waiting", "approval-waiting", func(w *observation, evs []*events.Event) []*events.Event {
			w.Resume.Result.Waiting[0].ID = "call_9_9"
			return evs
		}, "resume.result.waiting[0].id"},
		{"an answer left out", "approval-waiting", func(_ *observation, evs []*events.Event) []*events.Event {
			return slices.DeleteFunc(slices.Clone(evs), func(e *events.Event) bool { return e.Stage == events.StageApprovalResolved })
		}, "resume.calls[0].action"},
		{"a compaction left out", "compacted", func(_ *observation, evs []*events.Event) []*events.Event {
			i := slices.IndexFunc(evs, func(e *events.Event) bool { return e.Stage == events.StageCompactAfter })
			return slices.Delete(slices.Clone(evs), i, i+1)
		}, "rebuilt.compactions"},
		{"a sub-agent run's answer", "subagent", func(w *observation, evs []*events.Event) []*events.Event {
			w.Runs[1].Answer = "what is 6*7: 41"
			return evs
		}, "runs[1].answer"},
		{"a child session's conversation", "subagent", func(w *observation, evs []*events.Event) []*events.Event {
			w.Children[0].Rebuilt.Messages[0].Content = "what is 6*9"
			return evs
		}, "children[0].rebuilt.messages[0].content"},
		{"the child a resume carries on", "subagent-child-cut", func(w *observation, evs []*events.Event) []*events.Event {
			w.Resume.Calls[0].Action = "run"
			return evs
		}, "resume.calls[0].action"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := scenarioNamed(t, tc.history)
			evs, err := loadHistory(sc.name)
			if err != nil {
				t.Fatal(err)
			}
			want, err := loadExpected(sc.name)
			if err != nil {
				t.Fatal(err)
			}
			evs = tc.alter(&want.observation, evs)
			got, err := observe(t, sc, evs)
			if err == nil {
				err = compareHistory(sc.name, &want.observation, got)
			}
			if !errors.Is(err, errHistoryMismatch) || !strings.Contains(err.Error(), "history "+sc.name) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("replay of altered %s: %v; want errHistoryMismatch naming the history and %s", sc.name, err, tc.field)
			}
			t.Log(err)
		})
	}
}

// The replay rebuilds a history's session from its own events only:
// sub-agents' sessions are rebuilt apart, and a history whose sessions mix
// is refused with errBadHistory naming the event.
func TestRecordedHistorySessionsNeverMix(t *testing.T) {
	sc := scenarioNamed(t, "subagent")
	evs, err := loadHistory(sc.name)
	if err != nil {
		t.Fatal(err)
	}
	want, err := loadExpected(sc.name)
	if err != nil {
		t.Fatal(err)
	}
	// Every event, rebuilt as one session, is another conversation: the
	// filter by session is what keeps the children's messages out.
	mixed, err := loop.RebuildSession(evs)
	if err != nil {
		t.Fatal(err)
	}
	var diffs []string
	g, _ := asJSON(mixed.Messages)
	w, _ := asJSON(want.Rebuilt.Messages)
	if jsonDiff("messages", g, w, &diffs); len(diffs) == 0 {
		t.Fatal("the children's events change nothing of the parent's conversation: the history does not test the filter")
	}
	child := slices.IndexFunc(evs, func(e *events.Event) bool { return e.ParentRunID != "" })
	for _, tc := range []struct {
		name  string
		alter func(e *events.Event)
		want  string
	}{
		{"a child's event in the parent's session", func(e *events.Event) { e.AgentID, e.SessionID = historyAgent, sc.name }, "names a parent run"},
		{"an event of another session without lineage", func(e *events.Event) { e.ParentAgentID, e.ParentSessionID, e.ParentRunID = "", "", "" }, "no parent run"},
		{"a parent run that is not in the history", func(e *events.Event) { e.ParentRunID = stableULID(999, 'R') }, "is no run of the history"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			altered := slices.Clone(evs)
			altered[child] = evs[child].Clone()
			tc.alter(altered[child])
			_, err := observe(t, sc, altered)
			if !errors.Is(err, errBadHistory) || !strings.Contains(err.Error(), altered[child].ID) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("replay: %v; want errBadHistory naming event %s: %s", err, altered[child].ID, tc.want)
			}
			t.Log(err)
		})
	}
}

// A frozen history (one the engine no longer makes) is replayed but never
// recorded again: the recorder says why.
func TestFrozenHistoryIsNotRecordedAgain(t *testing.T) {
	frozen := scenarioNamed(t, "hooks-deny")
	for _, all := range []bool{false, true} {
		err := recordable(frozen, all)
		if !errors.Is(err, errFrozenHistory) || !strings.Contains(err.Error(), "hooks-deny must not be recorded again") || !strings.Contains(err.Error(), "ask") {
			t.Fatalf("recordable(hooks-deny, all %t) = %v; want errFrozenHistory saying why", all, err)
		}
	}
	if err := recordable(scenarioNamed(t, "approval-answered"), false); err != nil {
		t.Fatalf("recordable(approval-answered) = %v", err)
	}
}

func scenarioNamed(t *testing.T, name string) *historyScenario {
	t.Helper()
	for _, sc := range historyScenarios() {
		if sc.name == name {
			return sc
		}
	}
	t.Fatalf("no scenario %q", name)
	return nil
}

// checkHistory replays the recorded history of sc and compares what it
// sees with the expected file.
func checkHistory(t *testing.T, sc *historyScenario) error {
	t.Helper()
	evs, err := loadHistory(sc.name)
	if err != nil {
		return err
	}
	want, err := loadExpected(sc.name)
	if err != nil {
		return err
	}
	if want.History != sc.name {
		return fmt.Errorf("%w: %s names history %q", errBadHistory, historyPath(sc.name, expectedExt), want.History)
	}
	got, err := observe(t, sc, evs)
	if err != nil {
		return err
	}
	return compareHistory(sc.name, &want.observation, got)
}

// loadHistory reads a recorded history: one CloudEvent (structured JSON)
// a line, in stream order.
func loadHistory(name string) ([]*events.Event, error) {
	path := historyPath(name, eventsExt)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v (record it: HOOKBUS_RECORD=%s go test ./loop -run TestRecordHistories)", errBadHistory, err, name)
	}
	var out []*events.Event
	for i, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		var ce cloudevents.Event
		if err := json.Unmarshal(line, &ce); err != nil {
			return nil, fmt.Errorf("%w: %s line %d: %v", errBadHistory, path, i+1, err)
		}
		e, err := events.FromCloudEvent(ce)
		if err != nil {
			return nil, fmt.Errorf("%w: %s line %d: %w", errBadHistory, path, i+1, err)
		}
		out = append(out, e)
	}
	return out, nil
}

func loadExpected(name string) (*expectation, error) {
	path := historyPath(name, expectedExt)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errBadHistory, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var exp expectation
	if err := dec.Decode(&exp); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errBadHistory, path, err)
	}
	return &exp, nil
}

// compareHistory returns nil when got is want, or an error wrapping
// errHistoryMismatch naming the history and every field that differs.
func compareHistory(name string, want, got *observation) error {
	w, err := asJSON(want)
	if err != nil {
		return err
	}
	g, err := asJSON(got)
	if err != nil {
		return err
	}
	var diffs []string
	jsonDiff("", g, w, &diffs)
	if len(diffs) == 0 {
		return nil
	}
	const most = 12
	if len(diffs) > most {
		diffs = append(diffs[:most], fmt.Sprintf("and %d more", len(diffs)-most))
	}
	return fmt.Errorf("%w: history %s (%s): %s", errHistoryMismatch, name, historyPath(name, expectedExt), strings.Join(diffs, "; "))
}

func asJSON(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(b, &out)
}

// jsonDiff appends to out a line for each path where got and want (decoded
// JSON) differ. A missing list and an empty one are the same.
func jsonDiff(path string, got, want any, out *[]string) {
	show := func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: got %s, want %s", path, show(got), show(want)))
			return
		}
		keys := map[string]bool{}
		for k := range w {
			keys[k] = true
		}
		for k := range g {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			p := k
			if path != "" {
				p = path + "." + k
			}
			jsonDiff(p, g[k], w[k], out)
		}
	case []any:
		g, _ := got.([]any)
		if got != nil && g == nil {
			*out = append(*out, fmt.Sprintf("%s: got %s, want a list", path, show(got)))
			return
		}
		if len(g) != len(w) {
			*out = append(*out, fmt.Sprintf("%s: %d entries, want %d", path, len(g), len(w)))
		}
		for i := range min(len(g), len(w)) {
			jsonDiff(fmt.Sprintf("%s[%d]", path, i), g[i], w[i], out)
		}
	default:
		if g, ok := got.([]any); ok && want == nil && len(g) == 0 {
			return
		}
		if !reflect.DeepEqual(got, want) {
			*out = append(*out, fmt.Sprintf("%s: got %s, want %s", path, show(got), show(want)))
		}
	}
}
