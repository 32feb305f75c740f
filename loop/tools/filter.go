package tools

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
)

// fileTypes are the ripgrep --type names Grep knows, with their file-name
// globs (a subset of `rg --type-list`).
func fileTypes() map[string][]string {
	return map[string][]string{
		"c":          {"*.c", "*.h"},
		"cpp":        {"*.cpp", "*.cc", "*.cxx", "*.c++", "*.hpp", "*.hh", "*.hxx", "*.h", "*.inl"},
		"cs":         {"*.cs"},
		"css":        {"*.css", "*.scss", "*.sass", "*.less"},
		"docker":     {"Dockerfile", "Dockerfile.*", "*.dockerfile"},
		"go":         {"*.go"},
		"html":       {"*.html", "*.htm", "*.xhtml"},
		"java":       {"*.java", "*.jsp"},
		"js":         {"*.js", "*.jsx", "*.mjs", "*.cjs", "*.vue"},
		"json":       {"*.json", "*.jsonl", "*.json5"},
		"kotlin":     {"*.kt", "*.kts"},
		"lua":        {"*.lua"},
		"make":       {"Makefile", "makefile", "GNUmakefile", "*.mk", "*.mak"},
		"markdown":   {"*.md", "*.markdown", "*.mdx"},
		"md":         {"*.md", "*.markdown", "*.mdx"},
		"php":        {"*.php", "*.phtml"},
		"proto":      {"*.proto"},
		"py":         {"*.py", "*.pyi"},
		"python":     {"*.py", "*.pyi"},
		"rb":         {"*.rb", "*.gemspec", "Gemfile", "Rakefile"},
		"ruby":       {"*.rb", "*.gemspec", "Gemfile", "Rakefile"},
		"rust":       {"*.rs"},
		"scala":      {"*.scala", "*.sbt"},
		"sh":         {"*.sh", "*.bash", "*.zsh", "*.ksh", ".bashrc", ".zshrc", ".profile"},
		"sql":        {"*.sql"},
		"swift":      {"*.swift"},
		"toml":       {"*.toml"},
		"ts":         {"*.ts", "*.tsx", "*.mts", "*.cts"},
		"typescript": {"*.ts", "*.tsx", "*.mts", "*.cts"},
		"txt":        {"*.txt"},
		"xml":        {"*.xml", "*.xsd", "*.xsl", "*.svg"},
		"yaml":       {"*.yaml", "*.yml"},
	}
}

// fileFilter is Grep's glob and type arguments.
type fileFilter struct {
	globs []globRule
	types []string // file-name globs of the type; nil for any
}

type globRule struct {
	pat    *globPattern
	base   bool // no "/" in the glob: it matches the file name at any depth
	negate bool // "!glob": files it matches are not searched
}

// newFileFilter parses the glob argument as Claude Code passes it to
// ripgrep: split on white space, and on commas outside braces; and the type
// argument against fileTypes.
func newFileFilter(globs, typ string) (*fileFilter, error) {
	f := &fileFilter{}
	for _, field := range strings.Fields(globs) {
		for _, g := range splitOutsideBraces(field) {
			if g == "" {
				continue
			}
			rule := globRule{negate: strings.HasPrefix(g, "!")}
			g = strings.TrimPrefix(strings.TrimPrefix(g, "!"), "./")
			rule.base = !strings.Contains(g, "/")
			pat, err := compileGlob(g)
			if err != nil {
				return nil, fmt.Errorf("%w: Grep: glob: %v", ErrArguments, err)
			}
			rule.pat = pat
			f.globs = append(f.globs, rule)
		}
	}
	if typ != "" {
		types := fileTypes()
		t, ok := types[typ]
		if !ok {
			return nil, fmt.Errorf("%w: Grep: unknown file type %q (known: %s)", ErrArguments, typ, strings.Join(slices.Sorted(maps.Keys(types)), ", "))
		}
		f.types = t
	}
	return f, nil
}

// match reports whether Grep searches the file at p, relative to the
// directory searched.
func (f *fileFilter) match(p string) bool {
	base := path.Base(p)
	if f.types != nil {
		ok := false
		for _, t := range f.types {
			if m, _ := path.Match(t, base); m {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	positive, included := false, false
	for _, g := range f.globs {
		target := p
		if g.base {
			target = base
		}
		if g.pat.match(target) {
			if g.negate {
				return false
			}
			included = true
		}
		if !g.negate {
			positive = true
		}
	}
	return !positive || included
}

// splitOutsideBraces splits s at the commas that are not inside {...}.
func splitOutsideBraces(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}
