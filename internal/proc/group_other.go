//go:build !unix

package proc

import (
	"os/exec"
	"time"
)

// SetGroup does nothing where there are no Unix process groups.
func SetGroup(*exec.Cmd) {}

// KillGroup kills the command's process only: without process groups,
// processes it started may outlive it.
func KillGroup(cmd *exec.Cmd, _ time.Duration) {
	_ = cmd.Process.Kill()
}
