package interceptors

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/hookbus/hookbus/events"
)

// Matchers (Registration.Tools and Agents) come in two forms:
//
//   - globs, path.Match syntax ("fs_*", "support-?", "[a-c]*"), with
//     alternatives separated by "|" ("fs_*|bash"). Tool names and agent ids
//     hold no "/", so "*" matches any name;
//   - regular expressions, written "re:" then a Go regexp ("re:^mcp__.*__write",
//     "re:Edit|Write"). The expression matches when it matches anywhere in
//     the name, as Claude Code's hook matchers do (JavaScript's
//     RegExp.test); anchor it with ^ and $ to match the whole name.
//
// The empty matcher matches everything.

// RegexpPrefix starts a matcher that is a regular expression.
const RegexpPrefix = "re:"

// matcher is a compiled Tools or Agents value: a glob, or a regexp.
type matcher struct {
	glob  string
	re    *regexp.Regexp
	kinds bool // a non-empty Kinds value
}

// compileMatcher compiles s; the error says what is malformed.
func compileMatcher(s string) (matcher, error) {
	if expr, ok := strings.CutPrefix(s, RegexpPrefix); ok {
		if expr == "" {
			return matcher{}, fmt.Errorf("matcher %q has an empty regular expression", s)
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return matcher{}, fmt.Errorf("matcher %q: %v", s, err)
		}
		return matcher{re: re}, nil
	}
	if err := validateGlob(s); err != nil {
		return matcher{}, err
	}
	return matcher{glob: s}, nil
}

// match reports whether name matches. It does not allocate for a glob.
func (m matcher) match(name string) bool {
	if m.re != nil {
		return m.re.MatchString(name)
	}
	return matchGlob(m.glob, name)
}

// validateGlob reports a malformed glob or an empty alternative.
func validateGlob(glob string) error {
	if glob == "" {
		return nil
	}
	for alt := range strings.SplitSeq(glob, "|") {
		if alt == "" {
			return fmt.Errorf("glob %q has an empty alternative", glob)
		}
		if _, err := path.Match(alt, ""); err != nil {
			return fmt.Errorf("glob %q: %q is malformed: %v", glob, alt, err)
		}
	}
	return nil
}

// matchGlob reports whether name matches one of glob's alternatives. It does
// not allocate.
func matchGlob(glob, name string) bool {
	if glob == "" {
		return true
	}
	for rest := glob; ; {
		alt, tail, more := strings.Cut(rest, "|")
		if ok, _ := path.Match(alt, name); ok {
			return true
		}
		if !more {
			return false
		}
		rest = tail
	}
}

// compileKinds compiles a Kinds value: kinds (events.Kinds) or globs over
// them, separated by "|". A plain word that is no kind is an error, so that
// a misspelt kind is refused rather than matching nothing.
func compileKinds(s string) (matcher, error) {
	if strings.HasPrefix(s, RegexpPrefix) {
		return matcher{}, fmt.Errorf("kinds %q: kinds are matched by name or glob, not by regular expression", s)
	}
	if err := validateGlob(s); err != nil {
		return matcher{}, err
	}
	for alt := range strings.SplitSeq(s, "|") {
		if alt != "" && !strings.ContainsAny(alt, `*?[\`) && !events.ActionKind(alt).Valid() {
			return matcher{}, fmt.Errorf("%q is not a kind (want one of %v)", alt, events.ActionKinds())
		}
	}
	return matcher{glob: s, kinds: s != ""}, nil
}

// matchKind reports whether kind matches a compiled Kinds value: the empty
// value matches anything, a call with no kind matches nothing else.
func (m matcher) matchKind(kind events.ActionKind) bool {
	if !m.kinds {
		return true
	}
	return kind != "" && matchGlob(m.glob, string(kind))
}
