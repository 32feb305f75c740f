package tools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/tools"
)

// tree is a root directory for the file tools and a directory outside it.
type tree struct {
	root, outside string
	fs            *tools.FS
}

// base is the modification time files get, one second apart, so that the
// newest-first order of Glob and Grep is known.
var base = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newTree makes a root holding the given files (path -> content), each
// modified a second after the one before in the order given by order, and
// a directory outside it holding "secret".
func newTree(t *testing.T, files map[string]string, order ...string) *tree {
	t.Helper()
	tr := &tree{root: t.TempDir(), outside: t.TempDir()}
	for p, content := range files {
		writeTestFile(t, filepath.Join(tr.root, p), content)
	}
	for i, p := range order {
		at := base.Add(time.Duration(i) * time.Second)
		if err := os.Chtimes(filepath.Join(tr.root, p), at, at); err != nil {
			t.Fatal(err)
		}
	}
	writeTestFile(t, filepath.Join(tr.outside, "secret"), "top secret\n")
	f, err := tools.NewFS(tr.root)
	if err != nil {
		t.Fatal(err)
	}
	tr.fs = f
	return tr
}

func writeTestFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// symlinks adds, in the root, "link" to the outside secret, "linkdir" to
// the outside directory and "inlink" to root/a.txt.
func (tr *tree) symlinks(t *testing.T) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("symlink tests need Unix symlinks")
	}
	for name, target := range map[string]string{
		"link":    filepath.Join(tr.outside, "secret"),
		"linkdir": tr.outside,
		"inlink":  "a.txt",
	} {
		if err := os.Symlink(target, filepath.Join(tr.root, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// read returns the content of a file under the root.
func (tr *tree) read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(tr.root, p))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// call calls a tool with args marshalled to JSON (a string is sent as is).
func call(t *testing.T, tool loop.Tool, args any) (string, error) {
	t.Helper()
	raw, ok := args.(string)
	if !ok {
		b, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		raw = string(b)
	}
	return tool.Call(context.Background(), json.RawMessage(raw))
}

type obj = map[string]any
