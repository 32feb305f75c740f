package fakellm_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/hookbus/hookbus/internal/fakellm"
)

// shapes maps each event name of the sse steps ("" for unnamed events) to
// the paths their data hold, each with its JSON type
// ("candidates[].content.parts[].text string"); the fields named in
// opaque are kept but not entered (a function's arguments are the
// model's, not the API's shape).
func shapes(t *testing.T, steps []fakellm.Step, opaque ...string) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	var walk func(set map[string]bool, path string, v any)
	walk = func(set map[string]bool, path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			set[path+" object"] = true
			for k, c := range v {
				p := k
				if path != "" {
					p = path + "." + k
				}
				if slices.Contains(opaque, k) {
					set[p+" opaque"] = true
					continue
				}
				walk(set, p, c)
			}
		case []any:
			set[path+" array"] = true
			for _, c := range v {
				walk(set, path+"[]", c)
			}
		default:
			set[fmt.Sprintf("%s %T", path, v)] = true
		}
	}
	for _, st := range steps {
		if st.Kind != fakellm.KindSSE {
			t.Fatalf("step %q is not sse", st.Note)
		}
		for _, e := range st.Events {
			var v any
			if err := json.Unmarshal(e.Data, &v); err != nil {
				t.Fatalf("event %s: %v", e.Event, err)
			}
			if out[e.Event] == nil {
				out[e.Event] = map[string]bool{}
			}
			walk(out[e.Event], "", v)
		}
	}
	return out
}

// sameShape fails the test when the made steps send an event, a field or a
// type of field the recorded ones never hold.
func sameShape(t *testing.T, made []fakellm.Step, recording string, opaque ...string) {
	t.Helper()
	want := shapes(t, fakellm.MustRecorded(recording).Steps, opaque...)
	for ev, paths := range shapes(t, made, opaque...) {
		if want[ev] == nil {
			t.Errorf("event %q is not in recording %s", ev, recording)
			continue
		}
		for p := range paths {
			if !want[ev][p] {
				t.Errorf("event %q: %s is not in recording %s", ev, p, recording)
			}
		}
	}
}
