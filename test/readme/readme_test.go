package readme

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// wrapper makes a fragment of the README or docs/ a function body: match
// is a line of the fragment that identifies it, params declares the
// variables it uses, and after uses what it declares and leaves unused (a
// snippet stops where the reader's code goes on).
type wrapper struct {
	match  string
	params string
	after  string
}

var wrappers = []wrapper{
	{ // docs/AGENTS.md, Tools and the Bash sandbox: the no-rm hook
		match:  `remote.ServeConfig{Plugin: "no-rm"`,
		params: "ctx context.Context, nc *nats.Conn",
	},
	{ // docs/HOOKS.md, Go interceptors: a chain and an engine
		match:  `chain := interceptors.NewChain()`,
		params: "ctx context.Context, b *bus.Bus, model loop.Model, tools []loop.Tool",
		after:  "_ = res",
	},
	{ // docs/HOOKS.md, Go interceptors: a function on a stage in one line
		match:  `chain.RegisterFunc(events.StageToolAfter, "billing", meter)`,
		params: "chain *interceptors.Chain, meter interceptors.Func",
	},
	{ // docs/HOOKS.md, Prompt and agent hooks
		match:  `guard, err := prompt.New(prompt.Config{`,
		params: "b *bus.Bus, chain *interceptors.Chain, haiku, model loop.Model",
	},
	{ // docs/POLICIES.md, In Go: a policy file in a chain
		match:  `ps, err := policy.Parse("no-rm.yaml", src)`,
		params: "src []byte, chain *interceptors.Chain",
	},
	{ // docs/HOOKS.md, Remote interceptors: remote.Serve
		match:  `remote.ServeConfig{Plugin: "guard"`,
		params: "ctx context.Context",
	},
}

// imports are the packages fragments may use, by name.
var imports = map[string]string{
	"context":      "context",
	"json":         "encoding/json",
	"strings":      "strings",
	"fmt":          "fmt",
	"time":         "time",
	"bus":          "github.com/hookbus/hookbus/bus",
	"remote":       "github.com/hookbus/hookbus/bus/remote",
	"events":       "github.com/hookbus/hookbus/events",
	"interceptors": "github.com/hookbus/hookbus/interceptors",
	"loop":         "github.com/hookbus/hookbus/loop",
	"policy":       "github.com/hookbus/hookbus/policy",
	"scripted":     "github.com/hookbus/hookbus/loop/scripted",
	"tools":        "github.com/hookbus/hookbus/loop/tools",
	"prompt":       "github.com/hookbus/hookbus/hooks/prompt",
	"agenthook":    "github.com/hookbus/hookbus/hooks/agenthook",
	"nats":         "github.com/nats-io/nats.go",
}

// snippet is one ```go block of a Markdown file.
type snippet struct {
	file string // the file's path in the repository, slash-separated
	line int    // of its first line of code, 1-based
	code string
}

// snippets returns the ```go blocks of file, whose text is doc.
func snippets(t *testing.T, file, doc string) []snippet {
	t.Helper()
	var out []snippet
	var cur *snippet
	for i, l := range strings.Split(doc, "\n") {
		switch {
		case cur == nil && strings.TrimSpace(l) == "```go":
			cur = &snippet{file: file, line: i + 2}
		case cur != nil && strings.TrimSpace(l) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.code += l + "\n"
		}
	}
	if cur != nil {
		t.Fatalf("%s:%d: a ```go block that never ends", file, cur.line-1)
	}
	return out
}

// source returns the Go file that builds s as package pkg.
func source(t *testing.T, s snippet, pkg string) (string, error) {
	t.Helper()
	if f, err := parser.ParseFile(token.NewFileSet(), "", s.code, parser.PackageClauseOnly); err == nil && f.Name != nil {
		// A whole program, built as it is; errors point into its file.
		return fmt.Sprintf("//line %s:%d\n%s", s.file, s.line, s.code), nil
	}
	if _, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+s.code, parser.SkipObjectResolution); err == nil {
		// Declarations (types, interfaces, functions): a file of them.
		return withImports(s, fmt.Sprintf("package %s\n\n//line %s:%d\n%s", pkg, s.file, s.line, s.code), "\n\n//line ")
	}
	var found []wrapper
	for _, w := range wrappers {
		if strings.Contains(s.code, w.match) {
			found = append(found, w)
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("%s:%d: a Go fragment matches %d wrappers: give it one in test/readme/readme_test.go (the variables it uses)", s.file, s.line, len(found))
	}
	w := found[0]
	body := fmt.Sprintf("package %s\n\nfunc snippet(%s) error {\n//line %s:%d\n%s\t%s\n\treturn nil\n}\n", pkg, w.params, s.file, s.line, s.code, w.after)
	return withImports(s, body, "\n\nfunc snippet")
}

// withImports adds to body, before the first at, the imports of the
// packages it names (by the names of imports).
func withImports(s snippet, body, at string) (string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "", body, parser.SkipObjectResolution)
	if err != nil {
		return "", fmt.Errorf("%s:%d: %v", s.file, s.line, err)
	}
	var names []string
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && imports[id.Name] != "" && !slices.Contains(names, id.Name) {
				names = append(names, id.Name)
			}
		}
		return true
	})
	slices.Sort(names)
	var imp strings.Builder
	for _, n := range names {
		fmt.Fprintf(&imp, "\t%q\n", imports[n])
	}
	return strings.Replace(body, at, "\n\nimport (\n"+imp.String()+")"+at, 1), nil
}

// setupBlock is the ```sh block of the README that makes a module of the
// reader's depend on their clone (a replace directive), as lines.
func setupBlock(t *testing.T, readme string) []string {
	t.Helper()
	var cur []string
	in := false
	for _, l := range strings.Split(readme, "\n") {
		switch {
		case !in && strings.TrimSpace(l) == "```sh":
			in, cur = true, nil
		case in && strings.TrimSpace(l) == "```":
			in = false
			if slices.ContainsFunc(cur, func(l string) bool { return strings.HasPrefix(l, "go mod edit -replace github.com/hookbus/hookbus=") }) {
				return cur
			}
		case in:
			cur = append(cur, l)
		}
	}
	t.Fatal("README.md has no ```sh block with go mod edit -replace github.com/hookbus/hookbus=...: the reader's module setup")
	return nil
}

// sh runs script with sh -e in dir, in env; it returns its output.
func sh(t *testing.T, dir string, env []string, script string) string {
	t.Helper()
	cmd := exec.Command("sh", "-ec", script)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("README.md's module setup, run as\n%s\nfails: %v\n%s", script, err, out)
	}
	return string(out)
}

// TestReadmeGoSnippetsBuild builds every ```go block of README.md and of
// the Markdown files under docs/ (docFiles) as a reader would: in a module of their own outside this tree, made by the
// README's own commands (its ```sh block with go mod edit -replace), whose
// replace directive points at their clone (this tree). Each snippet is a
// package of that module (test/readme's sN); go mod tidy and go build run
// there. Nothing is downloaded: the modules come from the module cache
// (GOPROXY=off), and tidy is given -e because the test-only modules of some
// dependencies are not in it (a reader's tidy downloads them).
func TestReadmeGoSnippetsBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds with the go command")
	}
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var all []snippet
	for _, f := range docFiles(t, root) {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, snippets(t, f, string(b))...)
	}
	if len(all) == 0 {
		t.Fatal("no ```go block in README.md or docs/")
	}
	setup := setupBlock(t, string(readme))
	env := append(os.Environ(), "GOWORK=off", "GOPROXY=off", "GOSUMDB=off", "GOFLAGS=-mod=mod")

	// The README's commands up to go mod tidy make the module; the
	// snippets go in it; then tidy, and go build for go run.
	tidy := slices.IndexFunc(setup, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "go mod tidy") })
	if tidy < 0 {
		t.Fatal("README.md's module setup runs no go mod tidy")
	}
	home := t.TempDir()
	mod := strings.TrimSpace(sh(t, home, env, strings.Join(setup[:tidy], "\n")+"\npwd"))
	mod = mod[strings.LastIndex(mod, "\n")+1:]
	var edit struct {
		Replace []struct{ Old, New struct{ Path string } }
	}
	b, err := exec.Command("go", "mod", "edit", "-json", filepath.Join(mod, "go.mod")).Output()
	if err != nil || json.Unmarshal(b, &edit) != nil || len(edit.Replace) != 1 || edit.Replace[0].Old.Path != "github.com/hookbus/hookbus" {
		t.Fatalf("the module README.md's commands make replaces %s (%v), not github.com/hookbus/hookbus alone", b, err)
	}
	clone := edit.Replace[0].New.Path
	if !filepath.IsAbs(clone) {
		clone = filepath.Join(mod, clone)
	}
	if err := os.Symlink(root, clone); err != nil {
		t.Fatalf("the reader's clone at %s: %v", clone, err)
	}

	used := map[string]bool{}
	for i, s := range all {
		pkg := fmt.Sprintf("s%d", i+1)
		src, err := source(t, s, pkg)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, w := range wrappers {
			if strings.Contains(s.code, w.match) {
				used[w.match] = true
			}
		}
		if err := os.MkdirAll(filepath.Join(mod, pkg), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mod, pkg, "snippet.go"), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range wrappers {
		if !used[w.match] {
			t.Errorf("wrapper for %q matches no snippet of README.md or docs/: remove it", w.match)
		}
	}
	var rest []string
	for _, l := range setup[tidy:] {
		switch l = strings.TrimSpace(l); {
		case strings.HasPrefix(l, "go mod tidy"):
			rest = append(rest, "go mod tidy -e >/dev/null 2>&1")
		case strings.HasPrefix(l, "go run"):
			rest = append(rest, "go build ./...")
		default:
			rest = append(rest, l)
		}
	}
	sh(t, mod, env, strings.Join(rest, "\n"))
	t.Logf("%d Go snippets of README.md and docs/ build in a module of their own (%s)", len(all), mod)
}
