package main

import (
	"strings"
	"testing"
)

// observer approve --arguments (an approval with edited arguments) goes
// with --call, and only with approve: anything else is a usage error
// before any bus is opened.
func TestApproveArgumentsNeedsCall(t *testing.T) {
	for _, args := range [][]string{
		{"approve", "run-1", "--arguments", `{"command": "ls"}`},
		{"reject", "run-1", "--reason", "no", "--call", "call_1", "--arguments", `{"command": "ls"}`},
	} {
		code, _, stderr := observer(t, append(args, "--nats", "nats://127.0.0.1:1")...)
		if code != 2 || !strings.Contains(stderr, "--arguments goes with approve and --call") {
			t.Errorf("observer %v: exit %d %s", args, code, stderr)
		}
	}
}
