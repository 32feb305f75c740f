package policy

import (
	"regexp"
	"testing"

	"cel.dev/cel-go/common/types"
)

func TestAnchoredPrefix(t *testing.T) {
	for _, c := range []struct{ pattern, want string }{
		{`^rm-1\s+-rf`, "rm-1"},
		{`^git push`, "git push"},
		{`^sudo\b`, "sudo"},
		{`\Akubectl`, "kubectl"},
		{`(?m)^rm`, ""},
		{`(?i)^rm`, ""},
		{`^(rm|mv)`, ""},
		{`^abc|^abd`, ""},
		{`rm -rf`, ""},
		{`^\x{FFFD}x`, ""},
		{`^`, ""},
	} {
		if got := anchoredPrefix(c.pattern); got != c.want {
			t.Errorf("anchoredPrefix(%q) = %q, want %q", c.pattern, got, c.want)
		}
	}
}

// FuzzRegexMatch holds a planned matches call (its prefix test first) to
// the regular expression it plans.
func FuzzRegexMatch(f *testing.F) {
	for _, s := range [][2]string{{`^rm-1\s+-rf`, "rm-1  -rf /"}, {`^rm`, "git rm"}, {`^\x{FFFD}`, "\xff"}, {`^é+`, "éé"},
		{`(?s)^a.b`, "a\nb"}, {`^\.env$`, ".env"}, {`^(?i)ab`, "AB"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		re, err := regexp.Compile(pattern)
		if err != nil {
			return
		}
		m := &regexMatch{re: re, pattern: types.String(pattern), prefix: anchoredPrefix(pattern)}
		if got, want := m.match(types.String(s), nil), types.Bool(re.MatchString(s)); got != want {
			t.Fatalf("%q matches %q: %v, want %v (prefix %q)", pattern, s, got, want, m.prefix)
		}
	})
}
