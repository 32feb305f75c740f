//go:build !unix

package embedded

import (
	"fmt"
	"os"
	"path/filepath"
)

// lockStore creates the lock file exclusively where flock is not available;
// a file left by a crashed process must be removed by hand.
func lockStore(dir string) (*os.File, error) {
	path := filepath.Join(dir, LockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		if os.IsExist(err) {
			return nil, fmt.Errorf("%w: %s (%s exists)", ErrStoreLocked, dir, path)
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrServerStart, path, err)
	}
	return f, nil
}

func unlockStore(f *os.File) {
	if f == nil {
		return
	}
	name := f.Name()
	f.Close()
	os.Remove(name)
}
