package tools

import (
	"slices"
	"strings"
	"testing"
)

func TestGlobPattern(t *testing.T) {
	cases := []struct {
		pattern string
		yes, no []string
	}{
		{"*.go", []string{"a.go", ".x.go"}, []string{"d/a.go", "a.gox"}},
		{"**/*.go", []string{"a.go", "d/a.go", "d/e/f/a.go"}, []string{"a.txt", "d/a.go/x"}},
		{"src/**/*.ts", []string{"src/a.ts", "src/x/y/a.ts"}, []string{"a.ts", "lib/src/a.ts"}},
		{"src/**", []string{"src/a", "src/x/y"}, []string{"a", "srcx/a"}},
		{"**", []string{"a", "a/b/c"}, nil},
		{"a/**/b/**/c", []string{"a/b/c", "a/x/b/y/z/c"}, []string{"a/c", "a/b/x"}},
		{"*.{ts,tsx}", []string{"a.ts", "a.tsx"}, []string{"a.t", "a.js"}},
		{"{src,lib}/**/*.{go,md}", []string{"src/a.go", "lib/d/x.md"}, []string{"doc/a.go", "src/a.txt"}},
		{"a{b,{c,d}}e", []string{"abe", "ace", "ade"}, []string{"ae", "abde"}},
		{"{single}.go", []string{"{single}.go"}, []string{"single.go"}},
		{"file?.[ch]", []string{"file1.c", "fileX.h"}, []string{"file.c", "file10.c", "file1.o"}},
		{`\*.go`, []string{"*.go"}, []string{"a.go"}},
	}
	for _, tc := range cases {
		g, err := compileGlob(tc.pattern)
		if err != nil {
			t.Fatalf("compileGlob(%q): %v", tc.pattern, err)
		}
		for _, p := range tc.yes {
			if !g.match(p) {
				t.Errorf("%q does not match %q", tc.pattern, p)
			}
		}
		for _, p := range tc.no {
			if g.match(p) {
				t.Errorf("%q matches %q", tc.pattern, p)
			}
		}
	}
	for _, bad := range []string{"[", "a/[b", strings.Repeat("{a,b}", 11)} {
		if _, err := compileGlob(bad); err == nil {
			t.Errorf("compileGlob(%q) accepted it", bad)
		}
	}
}

func TestExpandBraces(t *testing.T) {
	cases := map[string][]string{
		"abc":          {"abc"},
		"{a,b}":        {"a", "b"},
		"x{a,b}y{1,2}": {"xay1", "xay2", "xby1", "xby2"},
		"{a,{b,c}d}":   {"a", "bd", "cd"},
		"{a,}":         {"a", ""},
		"{unclosed":    {"{unclosed"},
		`\{a,b}`:       {`\{a,b}`},
	}
	for in, want := range cases {
		got, err := expandBraces(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("expandBraces(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestCapWriterCountsCharacters(t *testing.T) {
	cases := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"éééé", 4, "éééé"},
		{"ééééé", 4, "éééé\n\n... [1 lines truncated] ...\n(output cut at 4 characters: 1 more characters were left out)"},
		{"ab\ncd\nef\n", 3, "ab\n\n... [2 lines truncated] ...\n(output cut at 3 characters: 6 more characters were left out)"},
		{"ab\ncd\nef", 4, "ab\nc\n\n... [2 lines truncated] ...\n(output cut at 4 characters: 4 more characters were left out)"},
	}
	for _, tc := range cases {
		w := newCapWriter(tc.max)
		for _, b := range []byte(tc.in) { // byte by byte: characters split across writes
			_, _ = w.Write([]byte{b})
		}
		if got := w.String(); got != tc.want {
			t.Errorf("cap(%q, %d) =\n%q\nwant\n%q", tc.in, tc.max, got, tc.want)
		}
	}
}
