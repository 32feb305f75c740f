//go:build !unix

package mcp

import "os/exec"

// newProcessGroup does nothing where there are no process groups.
func newProcessGroup(*exec.Cmd) {}

// signalGroup kills the child (there is no SIGTERM or process group here).
func signalGroup(cmd *exec.Cmd, kill bool) {
	if cmd.Process != nil && kill {
		_ = cmd.Process.Kill()
	}
}
