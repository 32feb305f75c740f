//go:build !unix

package tools

import (
	"os/exec"
	"time"
)

// setProcessGroup does nothing where there are no Unix process groups.
func setProcessGroup(*exec.Cmd) {}

// killGroup kills the shell only: without process groups, processes it
// started in the background may outlive it.
func killGroup(cmd *exec.Cmd, _ time.Duration) {
	_ = cmd.Process.Kill()
}
