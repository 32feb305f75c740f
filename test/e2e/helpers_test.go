package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries builds loop and observer once per test binary and returns the
// directory they are in.
func binaries(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "hookbus-e2e-bin")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", binDir+"/", "github.com/hookbus/hookbus/cmd/loop", "github.com/hookbus/hookbus/cmd/observer")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			buildErr = &buildError{err: err, out: out.String()}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "go build: " + e.err.Error() + "\n" + e.out }

// denyReason is the guard's reason for denying an rm -rf.
const denyReason = "hookbus guard: no rm -rf in this repository"

// shellTools are the shell tools of the CLIs the tests drive, as their
// hooks name them: Claude Code's, Codex CLI's and Copilot CLI's Bash,
// Gemini CLI's and Qwen Code's run_shell_command, Factory Droid's Execute,
// Cline's run_commands.
const shellTools = "Bash|run_shell_command|Execute|run_commands"

// guard is the remote interceptor of the tests, on tool.before (the
// shellTools): it denies commands with rm -rf, and rewrites
// "touch original.txt" to "touch rewritten.txt".
func guard(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
	var p events.ToolBefore
	if err := req.Event.DecodeData(&p); err != nil {
		return nil, err
	}
	var args struct {
		Command string `json:"command"`
	}
	_ = json.Unmarshal(p.Call.Arguments, &args)
	if a := p.Call.Action; a != nil && a.Command != "" {
		args.Command = a.Command // a CLI whose shell tool takes a list (Cline's commands)
	}
	switch {
	case strings.Contains(args.Command, "rm -rf"):
		return &interceptors.Decision{Kind: interceptors.Deny, Reason: denyReason}, nil
	case strings.Contains(args.Command, "touch original.txt"):
		return &interceptors.Decision{Kind: interceptors.Modify, Patch: []interceptors.PatchOp{{Op: "replace",
			Path: "/call/arguments/command", Value: json.RawMessage(`"touch rewritten.txt"`)}}}, nil
	}
	return nil, nil
}

// startBus starts a NATS server other processes reach, with guard
// registered on tool.before and served; it returns the server's URL and
// the bus.
func startBus(t *testing.T) (string, *bus.Bus) {
	t.Helper()
	srv, nc := bustest.Start(t, bustest.WithListener())
	b := bustest.Provision(t, nc)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := remote.NewRegistry(b).Put(ctx, interceptors.Registration{Plugin: "guard", Stage: events.StageToolBefore, Tools: shellTools}); err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Serve(ctx, nc, remote.ServeConfig{Plugin: "guard", Stages: []events.Stage{events.StageToolBefore}}, interceptors.Func(guard)); err != nil {
		t.Fatal(err)
	}
	return srv.ClientURL(), b
}

// stages lists the stages of a session's events, space-separated.
func stages(t *testing.T, b *bus.Bus, session string) string {
	t.Helper()
	evs, err := b.SessionEvents(context.Background(), "claude-code", session)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, string(e.Stage))
	}
	return strings.Join(out, " ")
}

// run runs a binary of dir and returns its exit code, stdout and stderr.
func run(t *testing.T, dir, name, stdin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(dir, name), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}
