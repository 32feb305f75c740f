package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary be the interceptor process the harness
// starts (it re-runs its own executable as "interceptor").
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "interceptor" {
		if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A whole benchmark at a small scale: loop built from ./cmd/loop, every
// phase run, every table and the profile printed, nothing failed.
func TestBenchSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/loop and runs processes")
	}
	bin := filepath.Join(t.TempDir(), "loop")
	build := exec.Command("go", "build", "-o", bin, "../../loop")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/loop: %v\n%s", err, out)
	}
	cfg, err := parseFlags([]string{"--loop", bin, "--levels", "2,4", "--window", "1s", "--model-delay", "50ms", "--sat-runs", "20", "--sat-concurrency", "4", "--top", "5"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out, log strings.Builder
	if err := bench(ctx, cfg, &out, &log); err != nil {
		t.Fatalf("bench: %v\n%s", err, log.String())
	}
	s := out.String()
	for _, want := range []string{
		"## (a) Latency below saturation", "\n| 2 | ", "\n| 4 | ",
		"## (b) Cost per event at saturation", "| hookbus, 1 worker | 300 | ", "| raw PublishMsgAsync | 300 | ",
		"Raw publishes failed: 0; runs failed: 0; hook.failed: 0.",
		"JetStream API requests per run",
		"## (c) 1 vs 2 workers", "## Where the worker's time goes", "flat%",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the report lacks %q:\n%s", want, s)
		}
	}
}
