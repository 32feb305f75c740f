package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// runQueueWait returns how long the threads of process pid ("self" for
// this one) have waited on a run queue, runnable but not running: the sum
// over /proc/<pid>/task/*/schedstat of the second field. On a machine whose
// cores are all busy it grows with the latency that CPU contention adds.
func runQueueWait(pid string) (time.Duration, error) {
	tasks, err := filepath.Glob(filepath.Join("/proc", pid, "task", "*", "schedstat"))
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that exited
		}
		d, err := parseSchedstat(string(b))
		if err != nil {
			return 0, err
		}
		sum += d
	}
	return sum, nil
}

// parseSchedstat reads the run-queue wait (ns, the second field) of
// "<on cpu ns> <waiting ns> <timeslices>".
func parseSchedstat(s string) (time.Duration, error) {
	f := strings.Fields(s)
	if len(f) < 2 {
		return 0, fmt.Errorf("schedstat: %q has fewer than 2 fields", s)
	}
	n, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("schedstat: wait %q is not a number", f[1])
	}
	return time.Duration(n), nil
}
