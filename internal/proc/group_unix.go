//go:build unix

package proc

import (
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// SetGroup makes the command the leader of a new process group, so that
// KillGroup reaches everything it starts.
func SetGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// KillGroup ends the command's process group: SIGTERM, then SIGKILL once grace
// has passed with processes still in it. It returns at once when the group
// is already empty.
func KillGroup(cmd *exec.Cmd, grace time.Duration) {
	pgid := cmd.Process.Pid
	if err := syscall.Kill(-pgid, syscall.SIGTERM); errors.Is(err, syscall.ESRCH) {
		return
	}
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-deadline.C:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			return
		case <-tick.C:
			if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
				return
			}
		}
	}
}
