package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// asLoopEnv makes the test binary run as loop (its arguments a loop
// command line), for tests that configure a hook command as a coding
// agent would.
const asLoopEnv = "HOOKBUS_TEST_AS_LOOP"

func TestMain(m *testing.M) {
	if os.Getenv(asLoopEnv) == "1" {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	code := m.Run()
	if hookClientBin != "" {
		_ = os.RemoveAll(filepath.Dir(hookClientBin)) // the hook client built for the tests
	}
	os.Exit(code)
}

// loopCommand is a hook command running this test binary as loop.
func loopCommand(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return asLoopEnv + "=1 " + exe
}
