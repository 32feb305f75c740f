package policy

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// glob is one entry of a match list: a path.Match glob, or "re:" and a Go
// regular expression matching anywhere (interceptors' matcher syntax).
type glob struct {
	pattern string
	re      *regexp.Regexp
}

func compileGlob(s string) (glob, error) {
	if s == "" {
		return glob{}, fmt.Errorf("an empty entry (leave the list out to match anything)")
	}
	if expr, ok := strings.CutPrefix(s, interceptors.RegexpPrefix); ok {
		re, err := regexp.Compile(expr)
		if err != nil || expr == "" {
			return glob{}, fmt.Errorf("%q is not a regular expression: %v", s, err)
		}
		return glob{re: re}, nil
	}
	if strings.Contains(s, "|") {
		return glob{}, fmt.Errorf("%q: write alternatives as separate list entries", s)
	}
	if _, err := path.Match(s, ""); err != nil {
		return glob{}, fmt.Errorf("glob %q is malformed: %v", s, err)
	}
	return glob{pattern: s}, nil
}

func (g glob) match(s string) bool {
	if g.re != nil {
		return g.re.MatchString(s)
	}
	ok, _ := path.Match(g.pattern, s)
	return ok
}

// globs is a compiled match list; empty matches anything.
type globs []glob

func compileGlobs(list []string) globs {
	out := make(globs, 0, len(list))
	for _, s := range list {
		g, _ := compileGlob(s) // Parse checked them
		out = append(out, g)
	}
	return out
}

func (gs globs) match(s string) bool {
	return len(gs) == 0 || slices.ContainsFunc(gs, func(g glob) bool { return g.match(s) })
}

// registrationValue is a match list as a Registration's matcher: globs
// joined by "|". A list with a regular expression among others cannot be
// said that way: it returns "" (the registration matches more, Evaluate
// narrows).
func registrationValue(list []string) string {
	if len(list) == 1 {
		return list[0]
	}
	if slices.ContainsFunc(list, func(s string) bool { return strings.HasPrefix(s, interceptors.RegexpPrefix) }) {
		return ""
	}
	return strings.Join(list, "|")
}

// kindGlobMatchesAny reports whether a kinds entry matches some kind, so
// that a misspelt kind is refused.
func kindGlobMatchesAny(k string) bool {
	g, err := compileGlob(k)
	if err != nil || g.re != nil {
		return false
	}
	return slices.ContainsFunc(events.ActionKinds(), func(kind events.ActionKind) bool { return g.match(string(kind)) })
}

func kindList() string {
	var out []string
	for _, k := range events.ActionKinds() {
		out = append(out, string(k))
	}
	return strings.Join(out, ", ")
}
