// Package proc runs the processes hookbus starts for others (the Bash tool's
// commands, Claude Code command hooks) the same way: each in a process group
// of its own, ended whole at its deadline (SIGTERM, then SIGKILL after a
// grace period), with a minimal environment, in a root directory checked
// once (Dir).
//
//	env, err := proc.Env([]string{"CLAUDE_PROJECT_DIR=" + root}, extra)
//	cmd := exec.Command("/bin/sh", "-c", script)
//	cmd.Env = env
//	proc.SetGroup(cmd)
//	... at the deadline: proc.KillGroup(cmd, 2*time.Second)
package proc
