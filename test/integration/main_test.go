package integration

import (
	"bytes"
	"context"
	"fmt"
	"github.com/hookbus/hookbus/bus/bustest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
)

// bin holds the binaries built for this test run.
var bin string

func TestMain(m *testing.M) {
	if os.Getenv(envInterceptor) != "" {
		// This test binary was started as an interceptor process.
		os.Exit(interceptorProcess())
	}
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "hookbus-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	args := []string{"build", "-o", dir + string(os.PathSeparator)}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, "./cmd/loop", "./cmd/observer")
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the binaries: %v\n%s", err, out)
		return 1
	}
	bin = dir
	return m.Run()
}

// result is what a finished command left.
type result struct {
	code           int
	stdout, stderr string
}

// run runs one of the binaries to its end (bounded by 60 s).
func run(t *testing.T, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, name), args...)
	cmd.Dir = t.TempDir()
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

// start starts a binary in the background; it is killed at cleanup.
func start(t *testing.T, name string, args ...string) (*exec.Cmd, *bustest.Buffer) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, name), args...)
	cmd.Dir = t.TempDir()
	var buf bustest.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, &buf
}

// jsonEvents parses observer replay --json output back into events.
func jsonEvents(t *testing.T, out string) []*events.Event {
	t.Helper()
	var evs []*events.Event
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		e, err := events.Decode(events.Header{"content-type": {"application/cloudevents+json"}}, []byte(line))
		if err != nil {
			t.Fatalf("replay --json line %q: %v", line, err)
		}
		evs = append(evs, e)
	}
	return evs
}
