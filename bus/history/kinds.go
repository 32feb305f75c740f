package history

import (
	"path"
	"strings"

	"github.com/hookbus/hookbus/events"
)

// kinds is a parsed kinds expression: alternatives separated by '|', each
// an action kind or a glob of kinds ("shell", "file.*", "web.*", "*"), as
// policies' match.kinds.
type kinds []string

// parseKinds parses a kinds expression, refusing an alternative that is
// not a glob or matches no action kind (a misspelt kind would otherwise
// match nothing, silently).
func parseKinds(expr string) (kinds, error) {
	var k kinds
	for alt := range strings.SplitSeq(expr, "|") {
		alt = strings.TrimSpace(alt)
		if alt == "" {
			return nil, invalid("kinds %q: an empty alternative (want a kind such as \"shell\", a glob such as \"file.*\", or \"*\")", expr)
		}
		if _, err := path.Match(alt, ""); err != nil {
			return nil, invalid("kinds %q: %q is not a glob: %v", expr, alt, err)
		}
		some := false
		for _, kind := range events.ActionKinds() {
			ok, _ := path.Match(alt, string(kind))
			some = some || ok
		}
		if !some {
			return nil, invalid("kinds %q: %q matches no action kind (%s)", expr, alt, kindList())
		}
		k = append(k, alt)
	}
	return k, nil
}

func (k kinds) match(kind events.ActionKind) bool {
	for _, g := range k {
		if ok, _ := path.Match(g, string(kind)); ok {
			return true
		}
	}
	return false
}

func kindList() string {
	var names []string
	for _, k := range events.ActionKinds() {
		names = append(names, string(k))
	}
	return strings.Join(names, ", ")
}
