package audittest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/hookbus/hookbus/events"
)

// Histories are the recorded histories Stream joins by default: patches
// and a mock, denials and a hook failing closed, approvals answered, a
// sub-agent called twice, compactions.
var Histories = []string{"hooks-modify-mock", "hooks-deny", "approval-answered", "subagent", "compacted"}

// marks are the characters that tell the histories' ids apart (Crockford
// base32, as ULIDs are written).
const marks = "BCDEFGHJKMNPQRST"

// dir is loop/testdata/histories, found from this file.
func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "loop", "testdata", "histories")
}

// Stream returns the histories named (Histories when none) as one stream,
// in order, each event's Stored its position from 1. Every history is
// recorded with the same ids and clock, so the i-th history's ids and
// times are moved apart from the others': "01KDYAK" (the first 7
// characters of every id it holds) becomes "01KDY" + marks[i] + "K" (B,
// C, D, ...), and its hour 03 becomes 04+i. Nothing else changes.
func Stream(t testing.TB, names ...string) []*events.Event {
	t.Helper()
	evs, err := Load(names...)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// Load is Stream returning its error.
func Load(names ...string) ([]*events.Event, error) {
	if len(names) == 0 {
		names = Histories
	}
	if len(names) > len(marks) {
		return nil, fmt.Errorf("audittest: at most %d histories, got %d", len(marks), len(names))
	}
	var out []*events.Event
	for i, name := range names {
		path := filepath.Join(dir(), name+".events.jsonl")
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		b = bytes.ReplaceAll(b, []byte("01KDYAK"), []byte("01KDY"+marks[i:i+1]+"K"))
		b = bytes.ReplaceAll(b, []byte("2026-01-02T03:"), fmt.Appendf(nil, "2026-01-02T%02d:", 4+i))
		for n, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
			var ce cloudevents.Event
			if err := json.Unmarshal(line, &ce); err != nil {
				return nil, fmt.Errorf("audittest: %s line %d: %v", path, n+1, err)
			}
			e, err := events.FromCloudEvent(ce)
			if err != nil {
				return nil, fmt.Errorf("audittest: %s line %d: %w", path, n+1, err)
			}
			e.Stored = uint64(len(out) + 1)
			out = append(out, e)
		}
	}
	return out, nil
}
