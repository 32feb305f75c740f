package command

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/hookbus/hookbus/internal/proc"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/interceptors"
)

// Transcripts gives a session's transcript file, for the hook input's
// transcript_path. *claudecode.TranscriptDir implements it.
type Transcripts = claudecode.Transcripts

// Defaults of Config.
const (
	DefaultMaxOutput = 1 << 20
	DefaultKillGrace = 2 * time.Second
	DefaultShell     = "/bin/sh"
)

// Config is what command hooks of one agent share.
type Config struct {
	// Root is the agent's root directory: hooks run in it and find it in
	// CLAUDE_PROJECT_DIR and the input's cwd (required).
	Root string
	// Transcripts writes the session's transcript for transcript_path; nil
	// leaves transcript_path empty.
	Transcripts Transcripts
	// Env lists what a hook's environment holds beyond the minimal base
	// (PATH, HOME, USER, LOGNAME, LANG, LC_ALL, LC_CTYPE, TZ, TMPDIR,
	// TERM, as the worker has them, and CLAUDE_PROJECT_DIR): "NAME" passes
	// the worker's value, "NAME=value" sets one. Nothing else of the
	// worker's environment reaches a hook.
	Env []string
	// MaxOutput is how many bytes of stdout, and of stderr, are kept
	// (default DefaultMaxOutput); the rest is counted and said to be cut.
	MaxOutput int
	// KillGrace is how long a hook's processes have between SIGTERM and
	// SIGKILL (default DefaultKillGrace).
	KillGrace time.Duration
	// Shell runs a command as Shell -c command (default /bin/sh); a
	// handler's "shell" field overrides it.
	Shell string
	// Model is the agent's model, for SessionStart's model field.
	Model string
	// Logger logs async hooks' outcomes and transcript failures (default:
	// discard).
	Logger *slog.Logger
}

// handler is the command handler object of a settings file.
type handler struct {
	Type    string   `json:"type"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
	Shell   string   `json:"shell"`
	Async   bool     `json:"async"`
	// Read and ignored: how Claude Code shows or repeats a hook.
	Timeout       *float64 `json:"timeout"`
	StatusMessage string   `json:"statusMessage"`
	Once          bool     `json:"once"`
}

// Hook is a command hook: an interceptors.Interceptor that runs a Claude
// Code command hook on the events of its Claude Code event.
type Hook struct {
	cfg     Config
	event   claudecode.HookEvent
	command string
	args    []string // exec form: command is the program, args its arguments
	exec    bool
	shell   string
	async   bool
	timeout time.Duration // of an async hook, which runs past the chain
	env     []string
	pins    []pinned // the files the command names in the root, as the worker found them
	bg      sync.WaitGroup
}

// Factory returns the claudecode.Factory of "command" handlers: each
// handler becomes a Hook with cfg. The Config is checked once here.
func Factory(cfg Config) claudecode.Factory {
	return func(h claudecode.Handler, reg interceptors.Registration) (interceptors.Interceptor, error) {
		hk, err := New(cfg, h.Event, h.Raw)
		if err != nil {
			return nil, err
		}
		hk.timeout = h.Timeout
		return hk, nil
	}
}

// New returns the hook of a command handler (its JSON object in a settings
// file: {"type": "command", "command": "...", "timeout": 30}) for event.
// "args" (a hookbus addition) makes it the exec form: command is the
// program and args its arguments, with no shell. "async" runs it in the
// background: the chain does not wait for it and what it answers changes
// nothing. The files the command names inside the root are pinned now (see
// Run). The error wraps ErrInvalidConfig and names what is wrong.
func New(cfg Config, event claudecode.HookEvent, raw json.RawMessage) (*Hook, error) {
	root, err := proc.Dir(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	cfg.Root = root
	cfg.MaxOutput = cmp.Or(cfg.MaxOutput, DefaultMaxOutput)
	cfg.KillGrace = cmp.Or(cfg.KillGrace, DefaultKillGrace)
	cfg.Shell = cmp.Or(cfg.Shell, DefaultShell)
	if cfg.MaxOutput < 0 || cfg.KillGrace < 0 {
		return nil, fmt.Errorf("%w: MaxOutput and KillGrace must be positive", ErrInvalidConfig)
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	if !event.Mapped() {
		return nil, fmt.Errorf("%w: %q is not a Claude Code event hookbus maps", ErrInvalidConfig, event)
	}
	var h handler
	if err := claudecode.DecodeHandler(raw, claudecode.TypeCommand, &h); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if h.Command == "" {
		return nil, fmt.Errorf("%w: command handler has no command", ErrInvalidConfig)
	}
	env, err := hookEnv(cfg.Root, cfg.Env)
	if err != nil {
		return nil, err
	}
	hk := &Hook{cfg: cfg, event: event, command: h.Command, args: h.Args, exec: h.Args != nil,
		shell: cfg.Shell, async: h.Async, env: env, timeout: claudecode.DefaultCommandTimeout}
	if hk.pins, err = pins(cfg.Root, h.Command, h.Args, hk.exec, env); err != nil {
		return nil, err
	}
	if h.Timeout != nil && *h.Timeout > 0 {
		hk.timeout = time.Duration(*h.Timeout * float64(time.Second))
	}
	if h.Shell != "" {
		hk.shell = h.Shell
	}
	return hk, nil
}

// Intercept runs the hook on req's event and reads its answer
// (claudecode.Decide). An async hook is started and allow is answered at
// once. A PostToolUse hook does not run on a result that is an error
// (claudecode.Applies): it allows
// (claudecode.NotRun).
func (h *Hook) Intercept(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
	if !claudecode.Applies(h.event, req.Event) {
		return claudecode.NotRun(h.event), nil
	}
	in, err := claudecode.HookInput(ctx, h.cfg.Transcripts, h.event, req.Event, claudecode.Env{Cwd: h.cfg.Root, Model: h.cfg.Model}, h.cfg.Logger)
	if err != nil {
		return nil, err
	}
	if h.async {
		h.bg.Add(1)
		go func() {
			defer h.bg.Done()
			bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.timeout)
			defer cancel()
			r, err := h.Run(bctx, in)
			if err == nil {
				_, err = claudecode.Decide(h.event, req.Event, r)
			}
			if errors.Is(err, ErrChanged) {
				h.cfg.Logger.Warn("async command hook not run", "plugin", req.Registration.Plugin, "err", err)
				return
			}
			h.cfg.Logger.Debug("async command hook ended", "plugin", req.Registration.Plugin, "exit", r.ExitCode, "err", err)
		}()
		return nil, nil
	}
	r, err := h.Run(ctx, in)
	if errors.Is(err, ErrChanged) && h.event.Intercepts() && req.Event.Stage.Accepts().Has(events.DecisionDeny) {
		return &interceptors.Decision{Kind: interceptors.Deny, Reason: "blocked: " + err.Error(),
			Annotations: map[string]string{"refused": "changed"}}, nil
	}
	if err != nil {
		return nil, err
	}
	return claudecode.Decide(h.event, req.Event, r)
}

// Wait waits for the async runs started so far.
func (h *Hook) Wait() { h.bg.Wait() }

// Run runs the hook with in as its stdin and returns its exit status and
// output. It returns once the hook exited and every process it left in its
// process group is gone, or once ctx ends: then the group is killed
// (SIGTERM, then SIGKILL after KillGrace) and the error wraps
// interceptors.ErrTimeout (ctx's deadline) or ctx's error. A hook that does
// not start is an error wrapping ErrStart. A hook whose command names a file
// in the root that is no longer as it was when the hook was built (its
// content, or whether it exists) does not start: the error wraps ErrChanged
// and names the file.
func (h *Hook) Run(ctx context.Context, in *claudecode.Input) (claudecode.Reply, error) {
	for _, p := range h.pins {
		if err := p.check(); err != nil {
			return claudecode.Reply{}, fmt.Errorf("%s: %w", h.describe(), err)
		}
	}
	stdin, err := json.Marshal(in)
	if err != nil {
		return claudecode.Reply{}, fmt.Errorf("command hook: input: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return claudecode.Reply{}, err
	}
	cmd, outR, errR, err := h.start(stdin)
	if err != nil {
		return claudecode.Reply{}, err
	}
	stdout := &capBuffer{max: h.cfg.MaxOutput}
	stderr := &capBuffer{max: h.cfg.MaxOutput}
	var copied sync.WaitGroup
	copied.Add(2)
	go func() { defer copied.Done(); _, _ = io.Copy(stdout, outR) }()
	go func() { defer copied.Done(); _, _ = io.Copy(stderr, errR) }()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	var cause, werr error
	select {
	case werr = <-waited:
	case <-ctx.Done():
		cause = ctx.Err()
	}
	// Whatever ended the wait, nothing of the hook outlives the call: a
	// script that ignores SIGTERM is killed after the grace, its children
	// with it.
	proc.KillGroup(cmd, h.cfg.KillGrace)
	if cause != nil {
		_ = cmd.Process.Kill() // the shell, should it have left its group
		werr = <-waited
	}
	// A process that left the group (setsid) may still hold the pipes.
	done := make(chan struct{})
	go func() { copied.Wait(); close(done) }()
	grace := time.NewTimer(h.cfg.KillGrace)
	select {
	case <-done:
	case <-grace.C:
		outR.Close()
		errR.Close()
		<-done
	}
	grace.Stop()
	outR.Close()
	errR.Close()

	r := claudecode.Reply{}
	r.Stdout, r.StdoutCut = stdout.bytes()
	r.Stderr, r.StderrCut = stderr.bytes()
	if cause != nil {
		if errors.Is(cause, context.DeadlineExceeded) {
			return r, fmt.Errorf("%w: %s killed at its timeout: %w", interceptors.ErrTimeout, h.describe(), cause)
		}
		return r, fmt.Errorf("command hook %s killed: %w", h.describe(), cause)
	}
	var exit *exec.ExitError
	switch {
	case errors.As(werr, &exit):
		r.ExitCode = exit.ExitCode()
		if r.ExitCode < 0 { // killed by a signal: Claude Code's non-blocking error
			r.ExitCode = 128 + signalOf(exit)
		}
	case werr != nil:
		return r, fmt.Errorf("command hook %s: %w", h.describe(), werr)
	}
	return r, nil
}

// start starts the hook's command in a process group of its own, with
// stdin as its input, and returns the read ends of its stdout and stderr.
// The pipes are ours, not exec's, so that waiting for the hook does not
// wait for processes it left behind holding them.
func (h *Hook) start(stdin []byte) (cmd *exec.Cmd, outR, errR *os.File, err error) {
	if h.exec {
		cmd = exec.Command(h.command, h.args...)
	} else {
		cmd = exec.Command(h.shell, "-c", h.command)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("command hook: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, nil, nil, fmt.Errorf("command hook: %w", err)
	}
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = h.cfg.Root, h.env, outW, errW
	cmd.Stdin = bytes.NewReader(stdin)
	proc.SetGroup(cmd)
	if err := cmd.Start(); err != nil {
		for _, f := range []*os.File{outR, outW, errR, errW} {
			f.Close()
		}
		return nil, nil, nil, fmt.Errorf("%w: %s: %v", ErrStart, h.describe(), err)
	}
	outW.Close()
	errW.Close()
	return cmd, outR, errR, nil
}

// describe names the hook's command in errors.
func (h *Hook) describe() string {
	if h.exec {
		return fmt.Sprintf("%q %q", h.command, h.args)
	}
	return fmt.Sprintf("%q", h.command)
}
