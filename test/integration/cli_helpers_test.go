package integration

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runOpts shape a command run by runWith.
type runOpts struct {
	dir   string   // working directory (default: a new temporary one)
	env   []string // added to the environment ("K=V")
	stdin string
}

// runWith runs one of the binaries to its end (bounded by 60 s) with opts.
// $NATS_* variables of the test's own environment are removed, so only
// opts.env sets them.
func runWith(t *testing.T, opts runOpts, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, name), args...)
	cmd.Dir = opts.dir
	if cmd.Dir == "" {
		cmd.Dir = t.TempDir()
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NATS_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, opts.env...)
	cmd.Stdin = strings.NewReader(opts.stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}
