//go:build unix

package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockStore takes an exclusive, non-blocking flock on StoreDir/hookbus.lock.
// flock locks belong to the open file, so a second server in the same
// process is refused too.
func lockStore(dir string) (*os.File, error) {
	path := filepath.Join(dir, LockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrServerStart, path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s (%s is held)", ErrStoreLocked, dir, path)
		}
		return nil, fmt.Errorf("%w: lock %s: %w", ErrServerStart, path, err)
	}
	return f, nil
}

func unlockStore(f *os.File) {
	if f == nil {
		return
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	f.Close()
}
