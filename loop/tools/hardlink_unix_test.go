//go:build unix

package tools_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/loop/tools"
)

// A hard link already in the root to a file outside it: Read, Edit and
// Grep refuse the file, saying it has other names, and show and change
// nothing of it; Write replaces the link, leaving the outside file as it
// was.
func TestFileToolsRefuseHardLinks(t *testing.T) {
	tr := newTree(t, map[string]string{"a.txt": "in\n"})
	secret := filepath.Join(tr.outside, "secret")
	if err := os.Link(secret, filepath.Join(tr.root, "hard.txt")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	for name, c := range map[string]struct {
		tool func() (string, error)
	}{
		"Read": {func() (string, error) { return call(t, tr.fs.Read(), obj{"file_path": "hard.txt"}) }},
		"Edit": {func() (string, error) {
			return call(t, tr.fs.Edit(), obj{"file_path": "hard.txt", "old_string": "top", "new_string": "no"})
		}},
		"Grep": {func() (string, error) {
			return call(t, tr.fs.Grep(), obj{"pattern": "secret", "path": "hard.txt", "output_mode": "content"})
		}},
	} {
		out, err := c.tool()
		if strings.Contains(out, "top secret") || (err != nil && strings.Contains(err.Error(), "top secret")) {
			t.Errorf("%s showed the outside file: %q %v", name, out, err)
		}
		if name != "Grep" && (!errors.Is(err, tools.ErrHardLink) || !strings.Contains(err.Error(), "hard.txt") || !strings.Contains(err.Error(), "2 hard links")) {
			t.Errorf("%s of a hard link to an outside file: %q, %v; want ErrHardLink naming the path and its links", name, out, err)
		}
	}
	if got, err := os.ReadFile(secret); err != nil || string(got) != "top secret\n" {
		t.Fatalf("the outside file: %q, %v", got, err)
	}
	if _, err := call(t, tr.fs.Write(), obj{"file_path": "hard.txt", "content": "mine\n"}); err != nil {
		t.Fatalf("Write over a hard link: %v", err)
	}
	if got, err := os.ReadFile(secret); err != nil || string(got) != "top secret\n" {
		t.Fatalf("Write through a hard link changed the outside file: %q, %v", got, err)
	}
	if got := tr.read(t, "hard.txt"); got != "mine\n" {
		t.Fatalf("Write: %q", got)
	}
	if out, err := call(t, tr.fs.Read(), obj{"file_path": "hard.txt"}); err != nil || !strings.Contains(out, "mine") {
		t.Fatalf("Read of the written file, one link now: %q %v", out, err)
	}
}
