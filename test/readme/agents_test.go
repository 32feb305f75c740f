package readme

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/agents"
)

// TestAgentFilesParse parses every ```yaml block of README.md and docs/
// that is an agent definitions file (it starts with "agents:") as loop
// does, so that no example agent file is refused by the loop it documents.
func TestAgentFilesParse(t *testing.T) {
	root := repoRoot(t)
	n := 0
	for _, file := range docFiles(t, root) {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			t.Fatal(err)
		}
		var cur []string
		in, start := false, 0
		for i, l := range strings.Split(string(b), "\n") {
			switch {
			case !in && strings.TrimSpace(l) == "```yaml":
				in, start, cur = true, i+2, nil
			case in && strings.TrimSpace(l) == "```":
				in = false
				y := strings.Join(cur, "\n") + "\n"
				if !strings.HasPrefix(y, "agents:") {
					continue
				}
				n++
				if _, err := agents.Parse([]byte(y), file); err != nil {
					t.Errorf("%s:%d: the agent file is refused: %v", file, start, err)
				}
			case in:
				cur = append(cur, l)
			}
		}
	}
	if n == 0 {
		t.Fatal("no agent file in README.md or docs/")
	}
	t.Logf("%d agent files of README.md and docs/ parse", n)
}
