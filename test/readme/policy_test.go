package readme

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The README's policy file is the one test/integration applies to a
// worker and the bridge (TestPolicyDeniesRmRfInEveryAgent): what it shows
// is what is tested.
func TestReadmePolicyIsTheTestedFile(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(filepath.Join(root, "test", "integration", "testdata", "no-rm-rf.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```yaml\n"+string(file)+"```\n") {
		t.Fatalf("README.md does not show test/integration/testdata/no-rm-rf.yaml as a yaml block; the file is:\n%s", file)
	}
}
