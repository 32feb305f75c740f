//go:build !unix

package command

import (
	"os/exec"
	"time"
)

// setProcessGroup does nothing where there are no Unix process groups.
func setProcessGroup(*exec.Cmd) {}

// killGroup kills the hook's process only: without process groups,
// processes it started may outlive it.
func killGroup(cmd *exec.Cmd, _ time.Duration) {
	_ = cmd.Process.Kill()
}
