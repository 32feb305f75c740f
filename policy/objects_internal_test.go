package policy

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/events"
)

// jsonNames lists a struct's JSON field names, in order.
func jsonNames(t reflect.Type, skip ...string) []string {
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" && !slices.Contains(skip, name) {
			out = append(out, name)
		}
	}
	return out
}

// The CEL types follow the Go types: a field added to events.Action or
// events.ToolCall must be added to what policies read.
func TestObjectsFollowEvents(t *testing.T) {
	if got, want := actionDef.names, jsonNames(reflect.TypeFor[events.Action]()); !slices.Equal(got, want) {
		t.Errorf("hookbus.Action fields %v, events.Action's %v", got, want)
	}
	if got, want := callDef.names, jsonNames(reflect.TypeFor[events.ToolCall](), "action"); !slices.Equal(got, want) {
		t.Errorf("hookbus.Call fields %v, events.ToolCall's %v (its action is read as action)", got, want)
	}
}
