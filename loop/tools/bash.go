package tools

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/hookbus/hookbus/internal/proc"

	"github.com/hookbus/hookbus/events"
)

// Defaults of BashConfig: Claude Code's.
const (
	DefaultBashTimeout    = 2 * time.Minute
	DefaultBashMaxTimeout = 10 * time.Minute
)

// BashConfig configures the Bash tool. Zero values take Claude Code's
// defaults.
type BashConfig struct {
	// Root is the directory commands run in (required).
	Root string
	// Env lists what the command's environment holds beyond the minimal
	// base (PATH, HOME, USER, LOGNAME, LANG, LC_ALL, LC_CTYPE, TZ, TMPDIR,
	// TERM, as the worker has them): "NAME" passes the worker's value of
	// NAME, "NAME=value" sets it. Nothing else of the worker's environment
	// is passed, so its secrets (OPENAI_API_KEY...) stay out of commands.
	Env []string
	// Timeout is a command's timeout when the call gives none (default
	// 2 minutes); MaxTimeout the most a call may ask for (default 10
	// minutes).
	Timeout, MaxTimeout time.Duration
	// MaxOutput is how many characters of output are kept (default 30000).
	MaxOutput int
	// KillGrace is how long processes have between SIGTERM and SIGKILL when
	// the command is killed (default 2s).
	KillGrace time.Duration
	// Shell runs the command as Shell -c command. Default: bash found in the
	// worker's PATH, else /bin/sh.
	Shell string
	// Idempotent marks the tool idempotent (events.ToolSpec.Idempotent):
	// set it only when every command the agent may run can safely run twice.
	Idempotent bool
	// Sandbox confines commands: SandboxNone ("", the default: not
	// confined), SandboxBubblewrap or SandboxRequired (each command under
	// bubblewrap; NewBash refuses to build the tool when it is missing or
	// does not work here). SandboxNetwork leaves the network to sandboxed
	// commands (by default they have none, not even the host's loopback).
	// docs/SECURITY.md says what the sandbox confines.
	Sandbox        string
	SandboxNetwork bool
}

// Bash is the "Bash" tool: {"command", "description", "timeout"}. It runs
// the command with the shell in the root directory, in a process group of
// its own, with a minimal environment; when the command ends, times out or
// its ctx ends, every process left in the group is killed (SIGTERM, then
// SIGKILL after KillGrace). See docs/AGENTS.md, "Tools", for the
// result format. Without a sandbox (BashConfig.Sandbox) the command is not
// confined to the root, only its working directory is: it reaches whatever
// the worker's user can. In the sandbox it sees the root (read-write), the
// system directories (read-only), a private /tmp and nothing else of the
// file system, and no network unless SandboxNetwork.
type Bash struct {
	cfg BashConfig
	env []string
	sb  *sandbox // nil: commands run unconfined
}

// NewBash returns the Bash tool. It reads the worker's environment once,
// here. It returns an error wrapping ErrInvalidConfig when Root is not a directory,
// an Env entry is not a variable name, no shell is found, or the sandbox
// asked for is unknown, missing (no bwrap in PATH) or fails its trial run
// (bubblewrap cannot make its namespaces here: the message says why).
func NewBash(cfg BashConfig) (*Bash, error) {
	dir, err := proc.Dir(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("%w: Bash: %w", ErrInvalidConfig, err)
	}
	cfg.Root = dir
	cfg.Timeout = cmp.Or(cfg.Timeout, DefaultBashTimeout)
	cfg.MaxTimeout = cmp.Or(cfg.MaxTimeout, DefaultBashMaxTimeout)
	cfg.MaxOutput = cmp.Or(cfg.MaxOutput, 30000)
	cfg.KillGrace = cmp.Or(cfg.KillGrace, 2*time.Second)
	if cfg.Timeout < 0 || cfg.MaxTimeout < cfg.Timeout || cfg.MaxOutput < 0 || cfg.KillGrace < 0 {
		return nil, fmt.Errorf("%w: Bash: timeouts, output cap and grace must be positive, Timeout at most MaxTimeout", ErrInvalidConfig)
	}
	if cfg.Shell == "" {
		cfg.Shell = "/bin/sh"
		if p, err := exec.LookPath("bash"); err == nil {
			cfg.Shell = p
		}
	}
	if _, err := exec.LookPath(cfg.Shell); err != nil {
		return nil, fmt.Errorf("%w: Bash: shell %q: %v", ErrInvalidConfig, cfg.Shell, err)
	}
	env, err := commandEnv(cfg.Env)
	if err != nil {
		return nil, err
	}
	sb, err := newSandbox(cfg.Sandbox, cfg.Root, cfg.SandboxNetwork)
	if err != nil {
		return nil, err
	}
	if sb != nil {
		if err := sb.trial(cfg.Shell, env); err != nil {
			return nil, err
		}
		env = sb.env(env)
	}
	return &Bash{cfg: cfg, env: env, sb: sb}, nil
}

// Spec describes Bash to the model.
func (b *Bash) Spec() events.ToolSpec {
	schema := fmt.Sprintf(`{"type":"object","properties":{`+
		`"command":{"type":"string","description":"The shell command to run."},`+
		`"description":{"type":"string","description":"What the command does, in 5-10 words, for whoever reads the log."},`+
		`"timeout":{"type":"integer","minimum":1,"maximum":%d,"description":"Timeout in milliseconds (default %d, at most %d)."}`+
		`},"required":["command"],"additionalProperties":false}`,
		b.cfg.MaxTimeout.Milliseconds(), b.cfg.Timeout.Milliseconds(), b.cfg.MaxTimeout.Milliseconds())
	return events.ToolSpec{
		Name: "Bash",
		Description: "Runs a shell command in the working directory and returns its output (stdout and stderr together). " +
			"Each command runs in a fresh shell: cd and exported variables do not carry over. Background processes are killed when the command ends.",
		Parameters: json.RawMessage(schema),
		Idempotent: b.cfg.Idempotent,
	}
}

// Call runs the command. A non-zero exit, a timeout and the end of ctx are
// a *CommandError carrying the output.
func (b *Bash) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	var a struct {
		Command         *string `json:"command"`
		Description     string  `json:"description"`
		Timeout         *int    `json:"timeout"`
		RunInBackground bool    `json:"run_in_background"`
	}
	if err := decodeArgs("Bash", raw, &a); err != nil {
		return "", err
	}
	if a.Command == nil || strings.TrimSpace(*a.Command) == "" {
		return "", missing("Bash", "command")
	}
	if a.RunInBackground {
		return "", fmt.Errorf("%w: Bash: run_in_background is not supported: commands run in the foreground and their background processes are killed when they end", ErrArguments)
	}
	timeout := b.cfg.Timeout
	if a.Timeout != nil {
		if *a.Timeout <= 0 || time.Duration(*a.Timeout)*time.Millisecond > b.cfg.MaxTimeout {
			return "", fmt.Errorf("%w: Bash: \"timeout\" must be 1 to %d milliseconds, got %d", ErrArguments, b.cfg.MaxTimeout.Milliseconds(), *a.Timeout)
		}
		timeout = time.Duration(*a.Timeout) * time.Millisecond
	}
	return b.run(ctx, *a.Command, timeout)
}

func (b *Bash) run(ctx context.Context, command string, timeout time.Duration) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	// One pipe for stdout and stderr keeps them interleaved in the order
	// they were written. The pipe is ours, not exec's, so that waiting for
	// the shell does not wait for background processes holding it.
	pr, pw, err := os.Pipe()
	if err != nil {
		return "", fmt.Errorf("bash: %w", err)
	}
	cmd := exec.Command(b.cfg.Shell, "-c", command)
	if b.sb != nil {
		// bwrap leads the group; the sandbox's processes, in a session
		// of their own, die with it (--die-with-parent, and the end of
		// their PID namespace).
		cmd = b.sb.command(b.cfg.Shell, command)
	}
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = b.cfg.Root, b.env, pw, pw
	proc.SetGroup(cmd)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return "", fmt.Errorf("bash: start %s: %w", b.cfg.Shell, err)
	}
	pw.Close()
	out := newCapWriter(b.cfg.MaxOutput)
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(out, pr)
		close(copied)
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var cause, werr error
	select {
	case werr = <-waited:
	case <-timer.C:
		cause = ErrTimeout
	case <-ctx.Done():
		cause = ctx.Err()
	}
	elapsed := time.Since(start)
	// Whatever ended the wait, nothing of the command outlives the call.
	proc.KillGroup(cmd, b.cfg.KillGrace)
	if cause != nil {
		_ = cmd.Process.Kill() // the shell, should it have left its group
		werr = <-waited
	}
	// A process that left the group (setsid) may still hold the pipe.
	grace := time.NewTimer(b.cfg.KillGrace)
	select {
	case <-copied:
	case <-grace.C:
		pr.Close()
		<-copied
	}
	grace.Stop()
	pr.Close()

	output := strings.TrimRight(out.String(), "\n")
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(werr, &exit):
		code = exit.ExitCode()
	case werr != nil:
		return "", fmt.Errorf("bash: %w", werr)
	}
	if cause != nil {
		return "", &CommandError{ExitCode: code, Output: output, After: elapsed.Round(time.Millisecond), Err: cause}
	}
	if code != 0 {
		return "", &CommandError{ExitCode: code, Output: output, Err: ErrExitStatus}
	}
	if output == "" {
		return "(no output)", nil
	}
	return output, nil
}

// commandEnv builds a command's environment (internal/proc.Env) from the
// configured entries.
func commandEnv(extra []string) ([]string, error) {
	env, err := proc.Env(nil, extra)
	if err != nil {
		return nil, fmt.Errorf("%w: Bash: %w", ErrInvalidConfig, err)
	}
	return env, nil
}
