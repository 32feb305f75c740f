//go:build !unix

package command

import "os/exec"

// signalOf is 0 where signals are not reported.
func signalOf(*exec.ExitError) int { return 0 }
