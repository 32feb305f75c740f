package claudecode

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/hookbus/hookbus/interceptors"
)

// Claude Code's matchers (docs/PROTOCOL.md, "Claude Code hooks"):
//
//	"", "*" or none        every occurrence
//	only letters, digits,   exact names: "Bash", "Edit|Write" (hookbus also
//	_, | and ,              takes "," as a separator)
//	anything else          a JavaScript regular expression that matches
//	                       anywhere in the name: "mcp__memory__.*", "^Notebook"
//
// A regular expression is compiled as a Go (RE2) one: the common syntax is
// the same; what RE2 lacks (lookaround, backreferences) is refused when the
// settings load, naming the matcher.

// Matcher is a compiled Claude Code matcher.
type Matcher struct {
	src   string
	all   bool
	names []string
	re    *regexp.Regexp
}

// ParseMatcher compiles a Claude Code matcher; the error says what is
// wrong with it.
func ParseMatcher(m string) (*Matcher, error) {
	if m == "" || m == "*" {
		return &Matcher{src: m, all: true}, nil
	}
	if exactNames(m) {
		names := strings.FieldsFunc(m, func(r rune) bool { return r == '|' || r == ',' })
		if len(names) == 0 || strings.Contains(m, "||") || strings.Contains(m, ",,") ||
			strings.HasPrefix(m, "|") || strings.HasSuffix(m, "|") || strings.HasPrefix(m, ",") || strings.HasSuffix(m, ",") {
			return nil, fmt.Errorf("matcher %q has an empty name", m)
		}
		return &Matcher{src: m, names: names}, nil
	}
	re, err := regexp.Compile(m)
	if err != nil {
		return nil, fmt.Errorf("matcher %q is a regular expression Go cannot compile (hookbus uses RE2: no lookaround or backreferences): %v", m, err)
	}
	return &Matcher{src: m, re: re}, nil
}

// exactNames reports whether m holds only letters, digits, _, | and ,.
func exactNames(m string) bool {
	for _, c := range m {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '|', c == ',':
		default:
			return false
		}
	}
	return true
}

// Match reports whether the matcher matches name.
func (m *Matcher) Match(name string) bool {
	switch {
	case m.all:
		return true
	case m.re != nil:
		return m.re.MatchString(name)
	}
	return slices.Contains(m.names, name)
}

// Tools is the matcher as an interceptors.Registration Tools value: "" for
// every name, the names joined by "|" (a glob of exact names), or
// interceptors.RegexpPrefix and the expression.
func (m *Matcher) Tools() string {
	switch {
	case m.all:
		return ""
	case m.re != nil:
		return interceptors.RegexpPrefix + m.src
	}
	return strings.Join(m.names, "|")
}

// String returns the matcher as written.
func (m *Matcher) String() string { return m.src }
