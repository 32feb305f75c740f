//go:build unix

package tools_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// processGone reports whether the process pid has ended: it no longer
// exists, or it is a zombie waiting for its parent (init) to reap it.
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false // no /proc: it exists
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	s := string(b)
	rest := s[strings.LastIndexByte(s, ')')+1:]
	f := strings.Fields(rest)
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

const unixShell = true
