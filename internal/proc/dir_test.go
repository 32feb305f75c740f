package proc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDir(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	if got, err := Dir("."); err != nil || got != root {
		t.Fatalf(`Dir("."): %q, %v; want %q`, got, err, root)
	}
	for in, want := range map[string]string{
		"":                             "no Root",
		file:                           "is not a directory",
		filepath.Join(root, "missing"): "is not a directory",
	} {
		if _, err := Dir(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Dir(%q): %v, want an error saying %q", in, err, want)
		}
	}
}
