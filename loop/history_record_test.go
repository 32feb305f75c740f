package loop_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
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
		t.Run(sc.name, func(t *testing.T) {
			if err := recordable(sc, which == "all"); err != nil {
				if which == "all" {
					t.Skip(err)
				}
				t.Fatal(err)
			}
			recordHistory(t, sc)
		})
	}
}

// errFrozenHistory is the error of recording again a history that must
// never be recorded again (historyScenario.frozen).
var errFrozenHistory = errors.New("recorded history frozen")

// recordable returns nil when sc may be recorded, or an error wrapping
// errFrozenHistory saying why not. all says the history was not named
// (HOOKBUS_RECORD=all): it is then left as it is.
func recordable(sc *historyScenario, all bool) error {
	if sc.frozen == "" {
		return nil
	}
	left := "Nothing was written."
	if all {
		left = "It is left as it is."
	}
	return fmt.Errorf("%w: %s must not be recorded again (testdata/histories/README.md): %s %s", errFrozenHistory, sc.name, sc.frozen, left)
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

// stabilize makes a recording the same each time it is made; nothing the
// engine reads changes:
//   - the i-th event's id and time become a ULID of historyNow + i ms and
//     historyNow + i ms;
//   - each run id becomes a ULID of the time of the run's first event, and
//     a sub-agent's run and session ids (new ULIDs that the parent's
//     subagent.before names first) ones of that event's time;
//   - an approval.requested's expires_at becomes historyNow + its expiry
//     (rounded up to the second), an approval.resolved's answered_at its
//     own event's time;
//   - the data's and the lineage's references to any of these follow;
//   - hooks' latencies become 0, and tools' durations are dropped.
func stabilize(evs []*events.Event) []*events.Event {
	ids := map[string]string{}
	var pairs []string
	add := func(old string, n uint64, kind byte) {
		if _, ok := ids[old]; old != "" && !ok {
			ids[old] = stableULID(n, kind)
			pairs = append(pairs, old, ids[old])
		}
	}
	times := map[string]bool{}
	addTime := func(old, stable time.Time) {
		o, s := old.Format(time.RFC3339Nano), stable.Format(time.RFC3339Nano)
		if !old.IsZero() && !times[o] {
			times[o] = true
			pairs = append(pairs, o, s)
		}
	}
	for i, e := range evs {
		n := uint64(i + 1)
		add(e.ID, n, 'E')
		add(e.RunID, n, 'R')
		switch e.Stage {
		case events.StageSubagentBefore:
			var p events.SubagentBefore
			if e.DecodeData(&p) == nil {
				add(p.RunID, n, 'C')
				add(p.SessionID, n, 'S')
			}
		case events.StageApprovalRequested:
			var p events.ApprovalRequested
			if e.DecodeData(&p) == nil {
				addTime(p.ExpiresAt, historyNow.Add(ceilSecond(p.ExpiresAt.Sub(e.Time))))
			}
		case events.StageApprovalResolved:
			var p events.ApprovalResolved
			if e.DecodeData(&p) == nil {
				addTime(p.AnsweredAt, historyNow.Add(time.Duration(n)*time.Millisecond))
			}
		}
	}
	mapped := func(id string) string {
		if s, ok := ids[id]; ok {
			return s
		}
		return id
	}
	repl := strings.NewReplacer(pairs...)
	out := make([]*events.Event, len(evs))
	for i, e := range evs {
		c := e.Clone()
		c.ID, c.RunID, c.SessionID = ids[e.ID], ids[e.RunID], mapped(e.SessionID)
		c.ParentRunID, c.ParentSessionID = mapped(e.ParentRunID), mapped(e.ParentSessionID)
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

// ceilSecond is d rounded up to the second: an approval's expiry, from its
// expires_at (the request's time plus the expiry, truncated to the second)
// less its event's time (a moment after the request's).
func ceilSecond(d time.Duration) time.Duration {
	s := d.Truncate(time.Second)
	if s < d {
		s += time.Second
	}
	return s
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
