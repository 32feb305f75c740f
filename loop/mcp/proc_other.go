//go:build !unix

package mcp

import "os/exec"

// signalGroup kills the child (there is no SIGTERM or process group here).
func signalGroup(cmd *exec.Cmd, kill bool) {
	if cmd.Process != nil && kill {
		_ = cmd.Process.Kill()
	}
}
