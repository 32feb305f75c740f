//go:build unix

package bus_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system) the test process used:
// the client and the embedded server together. On a busy machine it is a
// steadier cost measure than wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
