//go:build unix

package command

import (
	"os/exec"
	"syscall"
)

// signalOf is the signal that ended a process, 0 if none did.
func signalOf(e *exec.ExitError) int {
	if ws, ok := e.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return int(ws.Signal())
	}
	return 0
}
