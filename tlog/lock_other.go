//go:build !unix

package tlog

import (
	"fmt"
	"os"
	"path/filepath"
)

// lockDir creates dir/witness.lock exclusively where flock is not
// available; a file left by a crashed process must be removed by hand.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, "witness.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if os.IsExist(err) {
			return nil, fmt.Errorf("%w: %s exists", ErrLocked, path)
		}
		return nil, err
	}
	return f, nil
}

func unlockDir(f *os.File) {
	if f == nil {
		return
	}
	name := f.Name()
	f.Close()
	os.Remove(name)
}
