package tools_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/tools"
)

// TestFileToolsStayInRoot tries every way out of the root with every file
// tool: each must fail with ErrPathEscape naming the path, read nothing
// and write nothing outside.
func TestFileToolsStayInRoot(t *testing.T) {
	tr := newTree(t, map[string]string{"a.txt": "in\n", "sub/b.txt": "in\n"})
	tr.symlinks(t)
	secret := filepath.Join(tr.outside, "secret")
	up, err := filepath.Rel(tr.root, secret)
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{
		"dot dot":                up,
		"dot dot after a dir":    "sub/../" + up,
		"absolute outside":       secret,
		"absolute with dot dot":  filepath.Join(tr.root, up),
		"symlink to a file":      "link",
		"symlinked directory":    "linkdir/secret",
		"new file in a link dir": "linkdir/new.txt",
	}
	dirs := map[string]string{
		"dot dot":             filepath.Dir(up),
		"absolute outside":    tr.outside,
		"symlinked directory": "linkdir",
		"symlink to a file":   "link",
	}
	type attempt struct {
		tool string
		args obj
		path string
	}
	var attempts []attempt
	for name, p := range paths {
		attempts = append(attempts,
			attempt{"Read/" + name, obj{"file_path": p}, p},
			attempt{"Write/" + name, obj{"file_path": p, "content": "pwned"}, p},
			attempt{"Edit/" + name, obj{"file_path": p, "old_string": "top", "new_string": "pwned"}, p},
			attempt{"Edit create/" + name, obj{"file_path": p, "old_string": "", "new_string": "pwned"}, p},
		)
	}
	for name, d := range dirs {
		attempts = append(attempts,
			attempt{"Glob/" + name, obj{"pattern": "*", "path": d}, d},
			attempt{"Grep/" + name, obj{"pattern": "secret", "path": d}, d},
		)
	}
	attempts = append(attempts,
		attempt{"Glob/pattern with dot dot", obj{"pattern": "../*/secret"}, "../*/secret"},
		attempt{"Glob/absolute pattern outside", obj{"pattern": filepath.Join(tr.outside, "*")}, filepath.Join(tr.outside, "*")},
	)
	for _, a := range attempts {
		t.Run(a.tool, func(t *testing.T) {
			tool := toolFor(tr, strings.Split(a.tool, "/")[0])
			got, err := call(t, tool, a.args)
			if !errors.Is(err, tools.ErrPathEscape) {
				t.Fatalf("%v = %q, %v; want ErrPathEscape", a.args, got, err)
			}
			if !strings.Contains(err.Error(), a.path) {
				t.Errorf("error %q does not name the path %q", err, a.path)
			}
			if strings.Contains(got+err.Error(), "top secret") {
				t.Errorf("the secret leaked: %q, %v", got, err)
			}
		})
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "top secret\n" {
		t.Fatalf("the outside file is now %q, %v", b, err)
	}
	if entries, _ := os.ReadDir(tr.outside); len(entries) != 1 {
		t.Fatalf("files were created outside the root: %v", entries)
	}
}

func toolFor(tr *tree, name string) loop.Tool {
	switch name {
	case "Read":
		return tr.fs.Read()
	case "Write":
		return tr.fs.Write()
	case "Edit", "Edit create":
		return tr.fs.Edit()
	case "Glob":
		return tr.fs.Glob()
	default:
		return tr.fs.Grep()
	}
}

// TestSearchesDoNotFollowLinksOut checks that Glob and Grep over the whole
// root list nothing outside it: a symlink pointing out is skipped, a
// symlinked directory not entered; a symlink to a file inside counts.
func TestSearchesDoNotFollowLinksOut(t *testing.T) {
	tr := newTree(t, map[string]string{"a.txt": "top secret? no\n"})
	tr.symlinks(t)
	got, err := call(t, tr.fs.Glob(), obj{"pattern": "**"})
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(got, "\n"); len(lines) != 2 || !contains(lines, "a.txt") || !contains(lines, "inlink") {
		t.Fatalf("Glob(**) = %q, want a.txt and inlink only", got)
	}
	got, err = call(t, tr.fs.Grep(), obj{"pattern": "secret", "output_mode": "content"})
	if err != nil || got != "a.txt:1:top secret? no\ninlink:1:top secret? no" {
		t.Fatalf("Grep(secret) = %q, %v", got, err)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
