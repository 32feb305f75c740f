package proc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Dir checks root, the directory processes are to run in (a Config's Root),
// and returns it absolute. An empty root, or one that is not an existing
// directory, is an error that says so.
func Dir(root string) (string, error) {
	if root == "" {
		return "", errors.New("no Root")
	}
	dir, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("root %q: %v", root, err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("root %q is not a directory", root)
	}
	return dir, nil
}
