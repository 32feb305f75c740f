package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// clockTick is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on every Linux that Go supports).
const clockTick = 10 * time.Millisecond

// proc is a child process whose stderr is logged to a file and watched for
// a line saying it is ready.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // the Wait error, once done is closed

	mu   sync.Mutex
	tail []string // the last lines of stderr, for error messages
}

// startProc starts bin with args, logging its stderr to logPath, and waits
// until a line of stderr contains ready; it returns that line.
func startProc(ctx context.Context, name, logPath, ready string, bin string, args ...string) (*proc, string, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logf
	stderr, err := cmd.StderrPipe()
	if err != nil {
		_ = logf.Close()
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, "", fmt.Errorf("%w: %s: %v", errChild, name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	readyLine := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, line)
			p.mu.Lock()
			p.tail = append(p.tail, line)
			if len(p.tail) > 20 {
				p.tail = p.tail[1:]
			}
			p.mu.Unlock()
			if strings.Contains(line, ready) {
				select {
				case readyLine <- line:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		p.err = cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	wait := time.NewTimer(30 * time.Second)
	defer wait.Stop()
	select {
	case line := <-readyLine:
		return p, line, nil
	case <-p.done:
		return nil, "", fmt.Errorf("%w: %s exited before it was ready (%v): %s", errChild, name, p.err, p.lastLines())
	case <-wait.C:
		p.kill()
		return nil, "", fmt.Errorf("%w: %s not ready after 30s: %s", errChild, name, p.lastLines())
	case <-ctx.Done():
		p.kill()
		return nil, "", ctx.Err()
	}
}

func (p *proc) lastLines() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, " | ")
}

// stop interrupts the process and waits for it to exit (it is killed after
// 45s); an exit caused by the interrupt is no error.
func (p *proc) stop() error {
	_ = p.cmd.Process.Signal(os.Interrupt)
	t := time.NewTimer(45 * time.Second)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		p.kill()
		return fmt.Errorf("%w: %s did not stop within 45s after an interrupt: killed", errChild, p.name)
	}
	if p.err != nil && p.cmd.ProcessState != nil && !p.cmd.ProcessState.Success() {
		if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == os.Interrupt {
			return nil
		}
		return fmt.Errorf("%w: %s: %v: %s", errChild, p.name, p.err, p.lastLines())
	}
	return nil
}

func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// cpu returns the CPU time (user + system) the process has used so far.
func (p *proc) cpu() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	return parseProcStat(string(b))
}

// parseProcStat reads utime + stime from the text of /proc/<pid>/stat. The
// command name (field 2) is in parentheses and may hold spaces: the fields
// are counted from the last ')'.
func parseProcStat(s string) (time.Duration, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/<pid>/stat: no ')' in %q", s)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state): utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/<pid>/stat: %d fields after the name, want at least 13", len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/<pid>/stat: utime %q, stime %q: not numbers", f[11], f[12])
	}
	return time.Duration(ut+st) * clockTick, nil
}

// selfCPU returns this process' CPU time (user + system).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// machineTicks is the first line of /proc/stat: busy and total ticks of
// every core together.
type machineTicks struct{ busy, total int64 }

func readMachine() (machineTicks, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineTicks{}, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return parseMachine(line)
}

// parseMachine parses "cpu user nice system idle iowait irq softirq steal
// ...": busy is everything but idle and iowait.
func parseMachine(line string) (machineTicks, error) {
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return machineTicks{}, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var m machineTicks
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return machineTicks{}, fmt.Errorf("/proc/stat: field %d %q: not a number", i+1, v)
		}
		m.total += n
		if i != 3 && i != 4 { // idle, iowait
			m.busy += n
		}
	}
	return m, nil
}

// busyShare is the share of all cores busy between two readings.
func busyShare(a, b machineTicks) float64 {
	if b.total <= a.total {
		return 0
	}
	return float64(b.busy-a.busy) / float64(b.total-a.total)
}
