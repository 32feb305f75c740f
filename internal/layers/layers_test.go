package layers_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// module is hookbus' module path.
const module = "github.com/hookbus/hookbus"

// layer is one floor of the house: the packages it holds, by name.
type layer struct {
	what  string
	names []string
}

// layers are hookbus' packages from the ground up. A package may import
// those of its own layer and of the layers below it, never one above. A
// name stands for the package and those under it, "p/*" for those under it
// only; the longest name that matches places a package. docs/ARCHITECTURE.md
// explains each layer in a line.
var layers = []layer{
	{"the vocabulary, and helpers beneath everything else", []string{"events", "internal", "bus/internal"}},
	{"the decision model and the chain", []string{"interceptors"}},
	{"the rules of a run's record", []string{"record"}},
	{"the transport, the engine and the policies, none importing another", []string{"bus", "loop", "policy"}},
	{"their parts, and the hook kinds", []string{"bus/*", "loop/*", "hooks"}},
	{"assemblies and readers of the record", []string{"agents", "bridge", "audit", "telemetry", "webui", "tlog"}},
	{"the commands, and the tests and deployments that run them", []string{"cmd", "deploy", "sdk", "test"}},
}

// order is the layers as ARCHITECTURE.md's first line says them.
func order() string {
	parts := make([]string, len(layers))
	for i, l := range layers {
		parts[i] = l.names[0]
		if len(l.names) > 1 {
			parts[i] = "{" + strings.Join(l.names, ", ") + "}"
		}
	}
	return strings.Join(parts, " <- ")
}

// place returns the layer of pkg (a path inside the module, "" for the
// module's root) and the name that placed it, or -1.
func place(pkg string) (int, string) {
	at, by := -1, ""
	for i, l := range layers {
		for _, n := range l.names {
			ok := pkg == n || strings.HasPrefix(pkg, n+"/")
			if under, found := strings.CutSuffix(n, "/*"); found {
				ok = strings.HasPrefix(pkg, under+"/")
			}
			if ok && len(n) > len(by) {
				at, by = i, n
			}
		}
	}
	return at, by
}

// pkgs lists the module's packages with what each imports of the module:
// its own files' imports and its in-package tests'. External tests
// (package x_test) stand outside the graph: they may use any layer's
// helpers.
func pkgs(t *testing.T) map[string][]string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH: cannot list the packages' imports")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f",
		`{{.ImportPath}}{{range .Imports}} {{.}}{{end}}{{range .TestImports}} {{.}}{{end}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list -deps %s/...: %v", module, err)
	}
	inside := func(p string) (string, bool) {
		if p == module {
			return "", true
		}
		return strings.CutPrefix(p, module+"/")
	}
	m := map[string][]string{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		pkg, ok := inside(f[0])
		if !ok {
			continue
		}
		var imps []string
		for _, imp := range f[1:] {
			if p, ok := inside(imp); ok && !slices.Contains(imps, p) {
				imps = append(imps, p)
			}
		}
		m[pkg] = imps
	}
	if len(m) == 0 {
		t.Fatalf("go list -deps %s/... listed none of the module's packages:\n%s", module, out)
	}
	return m
}

// Every import runs one way: down the layers, or within one. A wrong
// import fails here, naming the arrow and the two layers.
func TestImportsRunOneWay(t *testing.T) {
	graph := pkgs(t)
	var bad []string
	used := map[string]bool{}
	for pkg, imps := range graph {
		from, by := place(pkg)
		if from < 0 {
			bad = append(bad, fmt.Sprintf("%s is in no layer: add it to a layer of internal/layers/layers_test.go (and docs/ARCHITECTURE.md)", pkg))
			continue
		}
		used[by] = true
		for _, imp := range imps {
			if to, toBy := place(imp); to > from {
				bad = append(bad, fmt.Sprintf("%s -> %s runs back up: from layer %d (%s: %s) to layer %d (%s: %s)",
					pkg, imp, from+1, by, layers[from].what, to+1, toBy, layers[to].what))
			}
		}
	}
	for _, l := range layers {
		for _, n := range l.names {
			if !used[n] {
				bad = append(bad, fmt.Sprintf("layer name %q places no package: remove it", n))
			}
		}
	}
	slices.Sort(bad)
	for _, b := range bad {
		t.Error(b)
	}
	if len(bad) > 0 {
		t.Logf("the layers, from the ground up: %s", order())
	}
}

// docs/ARCHITECTURE.md's package section opens with the layers as the
// table above has them.
func TestArchitectureNamesTheLayers(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Packages\n")
	if !ok {
		t.Fatal(`docs/ARCHITECTURE.md has no "## Packages" section`)
	}
	first, _, _ := strings.Cut(strings.TrimLeft(section, "\n"), "\n")
	if want := "`" + order() + "`"; !strings.Contains(first, want) {
		t.Fatalf("docs/ARCHITECTURE.md's package section opens with\n\t%s\nwant a line that holds the layers\n\t%s", first, want)
	}
}

// The rule itself: names place the packages they should, and the longest
// wins.
func TestPlace(t *testing.T) {
	for _, tc := range []struct {
		pkg, by string
	}{
		{"events", "events"},
		{"events/tracectx", "events"},
		{"internal/redact", "internal"},
		{"cmd/internal/cli", "cmd"},
		{"interceptors/interceptorstest", "interceptors"},
		{"bus", "bus"},
		{"bus/embedded", "bus/*"},
		{"loop/tools", "loop/*"},
		{"hooks/claudecode/claudecodetest", "hooks"},
		{"agents", "agents"},
		{"cmd/loop", "cmd"},
		{"", ""},
		{"busy", ""},
	} {
		if _, by := place(tc.pkg); by != tc.by {
			t.Errorf("%q placed by %q, want %q", tc.pkg, by, tc.by)
		}
	}
}

// readers are the packages that read the record, or answer what waits in
// it, without running agents: none links the engine, even through another
// package. They answer approvals through record/approval.
var readers = []string{"audit", "cmd/observer", "telemetry", "tlog", "webui"}

// The record's readers never depend on the engine (loop), directly or
// through another package (their own code; their tests may run it).
func TestReadersDoNotLinkTheEngine(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH: cannot list the packages' imports")
	}
	for _, r := range readers {
		out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", module+"/"+r).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", r, err)
		}
		if slices.Contains(strings.Fields(string(out)), module+"/loop") {
			t.Errorf("%s links the engine (%s/loop): answer approvals through record/approval", r, module)
		}
	}
}
