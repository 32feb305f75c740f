package loop_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop/looptest"
)

// TestRecordHistories records the histories named in $HOOKBUS_RECORD (a
// comma-separated list of scenario names, or "all") into
// testdata/histories; without it, it is skipped. It runs each scenario's
// engine on an in-memory journal, writes the events, stabilized (stable
// ids, times and latencies), and writes what the replay sees of them as
// the expected file, for a person to review before committing it. See
// testdata/histories/README.md for when an old history may be recorded
// again (almost never).
func TestRecordHistories(t *testing.T) {
	which := os.Getenv("HOOKBUS_RECORD")
	if which == "" {
		t.Skip("set HOOKBUS_RECORD=name[,name] (or all) to record histories into " + historiesDir)
	}
	names := strings.Split(which, ",")
	scs := historyScenarios()
	for _, n := range names {
		if n != "all" && !slices.ContainsFunc(scs, func(sc *historyScenario) bool { return sc.name == n }) {
			t.Errorf("HOOKBUS_RECORD names %q: no such scenario in history_scenarios_test.go", n)
		}
	}
	for _, sc := range scs {
		if which != "all" && !slices.Contains(names, sc.name) {
			continue
		}
		t.Run(sc.name, func(t *testing.T) { recordHistory(t, sc) })
	}
}

func recordHistory(t *testing.T, sc *historyScenario) {
	j := looptest.New()
	sc.record(t, sc, j)
	var buf bytes.Buffer
	for _, e := range stabilize(j.Events()) {
		b, err := json.Marshal(e.CloudEvent())
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if err := os.MkdirAll(historiesDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(historyPath(sc.name, eventsExt), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// The expected file is what the replay sees of the history as written.
	evs, err := loadHistory(sc.name)
	if err != nil {
		t.Fatal(err)
	}
	ob, err := observe(t, sc, evs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(expectation{History: sc.name, About: sc.about, observation: *ob}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(historyPath(sc.name, expectedExt), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkHistory(t, sc); err != nil {
		t.Fatal(err)
	}
}

var (
	latencyField  = regexp.MustCompile(`"latency_us":[0-9]+`)
	durationField = regexp.MustCompile(`,"duration_ms":[0-9]+`)
)

// stabilize makes a recording the same each time it is made: the i-th
// event's id becomes a ULID of historyNow + i ms, each run id one of the
// time of the run's first event (the data's references to either follow),
// the i-th event's time historyNow + i ms, hooks' latencies 0, and tools'
// durations are dropped. Nothing the engine reads changes.
func stabilize(evs []*events.Event) []*events.Event {
	ids := map[string]string{}
	var pairs []string
	for i, e := range evs {
		n := uint64(i + 1)
		ids[e.ID] = stableULID(n, 'E')
		pairs = append(pairs, e.ID, ids[e.ID])
		if _, ok := ids[e.RunID]; !ok {
			ids[e.RunID] = stableULID(n, 'R')
			pairs = append(pairs, e.RunID, ids[e.RunID])
		}
	}
	repl := strings.NewReplacer(pairs...)
	out := make([]*events.Event, len(evs))
	for i, e := range evs {
		c := e.Clone()
		c.ID, c.RunID = ids[e.ID], ids[e.RunID]
		c.Time = historyNow.Add(time.Duration(i+1) * time.Millisecond)
		data := repl.Replace(string(c.Data))
		data = latencyField.ReplaceAllString(data, `"latency_us":0`)
		data = durationField.ReplaceAllString(data, "")
		c.Data = json.RawMessage(data)
		c.Stored = 0
		out[i] = c
	}
	return out
}

// stableULID is a ULID of time historyNow + n ms whose entropy is kind and n.
func stableULID(n uint64, kind byte) string {
	var u ulid.ULID
	if err := u.SetTime(ulid.Timestamp(historyNow.Add(time.Duration(n) * time.Millisecond))); err != nil {
		panic(err)
	}
	var entropy [10]byte
	entropy[0] = kind
	binary.BigEndian.PutUint64(entropy[2:], n)
	if err := u.SetEntropy(entropy[:]); err != nil {
		panic(err)
	}
	return u.String()
}
