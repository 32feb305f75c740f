package mcp

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hookbus/hookbus/internal/proc"
)

const (
	// stderrTail is how much of a stdio server's standard error is kept
	// for the errors that report its death.
	stderrTail = 2048
	// waitDelay bounds how long reaping a dead child waits for the
	// holders of its stderr pipe (grandchildren) to let go.
	waitDelay = time.Second
	// closeGrace is how long Close waits after closing a stdio server's
	// stdin before SIGTERM, and after SIGTERM before SIGKILL.
	closeGrace = 2 * time.Second
)

// process is a running stdio server: a child in its own process group,
// talked to over two pipes the Server owns.
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File // our end of the child's stdin
	stdout *os.File // our end of the child's stdout
	stderr *tail
	exited chan struct{} // closed once the child has been reaped
}

// startProcess starts cfg's command with only its own environment, in a
// new process group.
func startProcess(cfg *ServerConfig) (*process, error) {
	path, err := lookPath(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Dir != "" {
		// exec's own error would name the command, not the directory.
		if fi, err := os.Stat(cfg.Dir); err != nil {
			return nil, fmt.Errorf("working directory: %w", err)
		} else if !fi.IsDir() {
			return nil, fmt.Errorf("working directory %s is not a directory", cfg.Dir)
		}
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd := exec.Command(path, cfg.Args...)
	cmd.Args[0] = cfg.Command
	cmd.Env = cfg.environ()
	cmd.Dir = cfg.Dir
	cmd.Stdin, cmd.Stdout = inR, outW
	p := &process{cmd: cmd, stdin: inW, stdout: outR, stderr: &tail{max: stderrTail}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	cmd.WaitDelay = waitDelay
	proc.SetGroup(cmd)
	err = cmd.Start()
	inR.Close() // the child has its copies
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// lookPath finds cfg.Command as the child would: a name without a path
// separator in the PATH of cfg.Env when it sets one, else in the worker's; a
// path as it is (relative to cfg.Dir).
func lookPath(cfg *ServerConfig) (string, error) {
	if strings.ContainsRune(cfg.Command, filepath.Separator) {
		return cfg.Command, nil
	}
	dirs, ok := cfg.Env["PATH"]
	if !ok {
		return exec.LookPath(cfg.Command)
	}
	for _, dir := range filepath.SplitList(dirs) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // as exec.LookPath, never the working directory
		}
		if path, err := exec.LookPath(filepath.Join(dir, cfg.Command)); err == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("exec: %q: executable file not found in the server's PATH %q", cfg.Command, dirs)
}

// kill sends SIGKILL to the child's process group.
func (p *process) kill() { signalGroup(p.cmd, true) }

// wait waits up to d for the child to exit and reports whether it did.
func (p *process) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// alive reports whether the child has not been reaped yet.
func (p *process) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop ends the child. Graceful: close its stdin (done by the caller, who
// closed the session) and wait, then SIGTERM, then SIGKILL, each after
// closeGrace; otherwise SIGKILL at once. Then it kills what is left of the
// process group (a grandchild the server started).
func (p *process) stop(graceful bool) {
	if graceful {
		p.stdin.Close()
		if !p.wait(closeGrace) {
			signalGroup(p.cmd, false)
			p.wait(closeGrace)
		}
	}
	p.kill()
	p.wait(closeGrace)
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu        sync.Mutex
	max       int
	buf       []byte
	truncated bool
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.truncated = true
	}
	return len(b), nil
}

// String is the kept text, trimmed, "..." first when older text was dropped.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if t.truncated && s != "" {
		s = "..." + s
	}
	return s
}
