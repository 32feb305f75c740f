package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
)

// pprofTop runs "go tool pprof -top" on a CPU profile of bin and returns
// the header and the first n entries, by flat time, then by cumulative time
// (cum: true).
func pprofTop(goCmd, bin, profile string, n int, cum bool) (string, error) {
	args := []string{"tool", "pprof", "-top", fmt.Sprintf("-nodecount=%d", n)}
	if cum {
		args = append(args, "-cum")
	}
	args = append(args, bin, profile)
	var out, errb bytes.Buffer
	cmd := exec.Command(goCmd, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	// Drop the lines before "Showing nodes" that name the file and type.
	s := out.String()
	if i := strings.Index(s, "Showing nodes"); i >= 0 {
		s = s[i:]
	}
	return s, nil
}
