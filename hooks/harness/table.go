package harness

import (
	"strings"
	"time"

	"github.com/hookbus/hookbus/events"
)

// Event is one of a harness's hook events: the stage it is recorded as
// ("" for a harness.event) and, when the harness bounds it more tightly
// than its other hooks, its own time limit.
type Event struct {
	Name  string
	Stage events.Stage
	Limit time.Duration
}

// Table is a harness's hook events, in the order a session meets them.
type Table []Event

// Names returns the events' names, in order.
func (t Table) Names() []string {
	out := make([]string, len(t))
	for i := range t {
		out[i] = t[i].Name
	}
	return out
}

// StageOf returns the stage the event name is recorded as; "" for one
// recorded as a harness.event, or one the harness does not have.
func (t Table) StageOf(name string) events.Stage {
	for i := range t {
		if t[i].Name == name {
			return t[i].Stage
		}
	}
	return ""
}

// LimitOf returns the event's own time limit, else def.
func (t Table) LimitOf(name string, def time.Duration) time.Duration {
	for i := range t {
		if t[i].Name == name && t[i].Limit > 0 {
			return t[i].Limit
		}
	}
	return def
}

// PromptAddition reads what interceptors made of a prompt (orig) that a
// harness can only add to, not replace: the text they appended (trimmed),
// or replaced when they changed the prompt otherwise.
func PromptAddition(orig, rewritten string) (added string, replaced bool) {
	if rest, ok := strings.CutPrefix(rewritten, orig); ok && rest != "" {
		return strings.TrimSpace(rest), false
	}
	return "", rewritten != orig
}
