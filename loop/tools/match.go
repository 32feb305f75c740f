package tools

import (
	"fmt"
	"path"
	"strings"
)

// maxBraceAlternatives bounds the expansion of {a,b} groups in a pattern.
const maxBraceAlternatives = 1024

// globPattern matches slash-separated relative paths: "*", "?" and "[...]"
// within one path segment (path.Match), "**" as a whole segment for any
// number of segments (none included), and "{a,b}" alternatives, nested or
// not.
type globPattern struct {
	alts [][]string // each alternative, split into segments
}

func compileGlob(pattern string) (*globPattern, error) {
	alts, err := expandBraces(pattern)
	if err != nil {
		return nil, err
	}
	g := &globPattern{}
	for _, alt := range alts {
		segs := strings.Split(strings.Trim(alt, "/"), "/")
		for _, s := range segs {
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("bad glob pattern %q: %v", pattern, err)
			}
		}
		g.alts = append(g.alts, segs)
	}
	return g, nil
}

// match reports whether the relative slash path p matches.
func (g *globPattern) match(p string) bool {
	name := strings.Split(p, "/")
	for _, segs := range g.alts {
		if matchSegments(segs, name) {
			return true
		}
	}
	return false
}

func matchSegments(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 1 && pat[1] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 1 {
				return true
			}
			for i := range len(name) + 1 {
				if matchSegments(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// expandBraces expands the first top-level {a,b,...} group of p, then the
// rest, recursively. A "{" without its "}" (or without a comma inside) is
// literal.
func expandBraces(p string) ([]string, error) {
	open, end, commas := -1, -1, []int(nil)
	depth := 0
	for i := 0; i < len(p) && end < 0; i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			if depth == 0 {
				open, commas = i, nil
			}
			depth++
		case ',':
			if depth == 1 {
				commas = append(commas, i)
			}
		case '}':
			if depth > 0 {
				depth--
				if depth == 0 {
					if len(commas) > 0 {
						end = i
					} else {
						open = -1
					}
				}
			}
		}
	}
	if open < 0 || end < 0 {
		return []string{p}, nil
	}
	var parts []string
	prev := open + 1
	for _, c := range commas {
		parts = append(parts, p[prev:c])
		prev = c + 1
	}
	parts = append(parts, p[prev:end])
	rests, err := expandBraces(p[end+1:])
	if err != nil {
		return nil, err
	}
	var out []string
	for _, part := range parts {
		heads, err := expandBraces(p[:open] + part)
		if err != nil {
			return nil, err
		}
		for _, h := range heads {
			for _, r := range rests {
				out = append(out, h+r)
				if len(out) > maxBraceAlternatives {
					return nil, fmt.Errorf("bad glob pattern %q: more than %d alternatives", p, maxBraceAlternatives)
				}
			}
		}
	}
	return out, nil
}
