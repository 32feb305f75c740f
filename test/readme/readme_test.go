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
	"runtime"
	"slices"
	"strings"
	"testing"
)

// wrapper makes a README fragment a function body: match is a line of the
// fragment that identifies it, params declares the variables it uses, and
// after uses what it declares and leaves unused (a snippet stops where the
// reader's code goes on).
type wrapper struct {
	match  string
	params string
	after  string
}

var wrappers = []wrapper{
	{ // Real agents: the no-rm hook
		match:  `remote.ServeConfig{Plugin: "no-rm"`,
		params: "ctx context.Context, nc *nats.Conn",
	},
	{ // Writing hooks: a chain and an engine
		match:  `chain := interceptors.NewChain()`,
		params: "ctx context.Context, b *bus.Bus, model loop.Model, tools []loop.Tool",
		after:  "_ = res",
	},
	{ // Writing hooks: registerLoopHook in one line
		match:  `chain.RegisterFunc(events.StageToolAfter, "billing", meter)`,
		params: "chain *interceptors.Chain, meter interceptors.Func",
	},
	{ // Prompt and agent hooks
		match:  `guard, err := prompt.New(prompt.Config{`,
		params: "b *bus.Bus, chain *interceptors.Chain, haiku, model loop.Model",
	},
	{ // Remote interceptors: remote.Serve
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
	"scripted":     "github.com/hookbus/hookbus/loop/scripted",
	"tools":        "github.com/hookbus/hookbus/loop/tools",
	"prompt":       "github.com/hookbus/hookbus/hooks/prompt",
	"agenthook":    "github.com/hookbus/hookbus/hooks/agenthook",
	"nats":         "github.com/nats-io/nats.go",
}

// snippet is one ```go block of the README.
type snippet struct {
	line int // of its first line of code, 1-based
	code string
}

func snippets(t *testing.T, readme string) []snippet {
	t.Helper()
	var out []snippet
	var cur *snippet
	for i, l := range strings.Split(readme, "\n") {
		switch {
		case cur == nil && strings.TrimSpace(l) == "```go":
			cur = &snippet{line: i + 2}
		case cur != nil && strings.TrimSpace(l) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.code += l + "\n"
		}
	}
	if cur != nil {
		t.Fatalf("README.md:%d: a ```go block that never ends", cur.line-1)
	}
	return out
}

// source returns the Go file that builds s as package pkg.
func source(t *testing.T, s snippet, pkg string) (string, error) {
	t.Helper()
	if f, err := parser.ParseFile(token.NewFileSet(), "", s.code, parser.PackageClauseOnly); err == nil && f.Name != nil {
		// A whole program, built as it is; errors point into the README.
		return fmt.Sprintf("//line README.md:%d\n%s", s.line, s.code), nil
	}
	var found []wrapper
	for _, w := range wrappers {
		if strings.Contains(s.code, w.match) {
			found = append(found, w)
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("README.md:%d: a Go fragment matches %d wrappers: give it one in test/readme/readme_test.go (the variables it uses)", s.line, len(found))
	}
	w := found[0]
	body := fmt.Sprintf("package %s\n\nfunc snippet(%s) error {\n//line README.md:%d\n%s\t%s\n\treturn nil\n}\n", pkg, w.params, s.line, s.code, w.after)
	// The packages the fragment and its parameters name.
	f, err := parser.ParseFile(token.NewFileSet(), "", body, parser.SkipObjectResolution)
	if err != nil {
		return "", fmt.Errorf("README.md:%d: %v", s.line, err)
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
	return strings.Replace(body, "\n\nfunc snippet", "\n\nimport (\n"+imp.String()+")\n\nfunc snippet", 1), nil
}

// TestReadmeGoSnippetsBuild builds every ```go block of README.md with
// go build, the snippets placed (through -overlay, writing nothing in the
// tree) in packages test/readme/snippets/sN of this module.
func TestReadmeGoSnippetsBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds with the go command")
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	all := snippets(t, string(readme))
	if len(all) == 0 {
		t.Fatal("no ```go block in README.md")
	}
	tmp := t.TempDir()
	overlay := map[string]map[string]string{"Replace": {}}
	var pkgs []string
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
		virtual := filepath.Join(root, "test", "readme", "snippets", pkg, "snippet.go")
		real := filepath.Join(tmp, pkg+".go")
		if err := os.WriteFile(real, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		overlay["Replace"][virtual] = real
		pkgs = append(pkgs, "./test/readme/snippets/"+pkg)
	}
	for _, w := range wrappers {
		if !used[w.match] {
			t.Errorf("wrapper for %q matches no snippet of README.md: remove it", w.match)
		}
	}
	b, err := json.Marshal(overlay)
	if err != nil {
		t.Fatal(err)
	}
	ov := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(ov, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", append([]string{"build", "-overlay", ov}, pkgs...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("README.md's Go snippets do not build: %v\n%s", err, out)
	}
	t.Logf("%d Go snippets of README.md build", len(all))
}
