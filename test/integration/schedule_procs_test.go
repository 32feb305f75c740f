package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// The processes of the randomized fault schedule (TestFaultRandomizedSchedule):
// the nats-server, three workers and the fail-closed interceptor, each one
// the schedule can SIGKILL and start again, or SIGSTOP and SIGCONT.

// envGuardLog is the file the guard interceptor records every request it
// saw in (a guard process started by the test).
const envGuardLog = "HOOKBUS_TEST_GUARD_LOG"

// envFaultWorker names a schedule worker in its environment; the agents'
// bash.env passes it to their Bash commands, so an execution line says which
// worker ran it.
const envFaultWorker = "FAULT_WORKER"

// uncheckedTag is the part of the schedule's Bash command that the guard
// replaces with "checked <run> <call>": a command that runs as the script
// wrote it writes "unchecked - -" in calls.log, a tool run without the
// guard's decision.
const uncheckedTag = "unchecked - -"

// guardBehaviour is the schedule's fail-closed tool.before check (plugin
// guard): it appends "<run> <call> <tool> <request id> <pid>" to logPath and
// syncs it before it answers; it allows every call, a Bash call modified
// (a JSON patch of its command) so that its execution line names the run
// and call: "checked <run> <call>" in place of uncheckedTag. A Bash command
// without the tag is denied.
func guardBehaviour(plugin, logPath string) (behaviour, error) {
	f, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return behaviour{}, err
	}
	var mu sync.Mutex
	record := func(line string) error {
		mu.Lock()
		defer mu.Unlock()
		if _, err := f.WriteString(line); err != nil {
			return err
		}
		return f.Sync()
	}
	return behaviour{stage: events.StageToolBefore, plugin: plugin, ic: func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
		var tb events.ToolBefore
		if err := req.Event.DecodeData(&tb); err != nil {
			return nil, err
		}
		e := req.Event
		if err := record(fmt.Sprintf("%s %s %s %s %d\n", e.RunID, tb.Call.ID, tb.Call.Name, e.ID, os.Getpid())); err != nil {
			return nil, fmt.Errorf("guard: recording the request: %w", err)
		}
		if tb.Call.Name != "Bash" {
			return nil, nil
		}
		var args struct {
			Command string `json:"command"`
		}
		if err := json.Unmarshal(tb.Call.Arguments, &args); err != nil || !strings.Contains(args.Command, uncheckedTag) {
			return &interceptors.Decision{Kind: interceptors.Deny, Reason: "guard: not the schedule's command"}, nil
		}
		cmd, err := json.Marshal(strings.Replace(args.Command, uncheckedTag, "checked "+e.RunID+" "+tb.Call.ID, 1))
		if err != nil {
			return nil, err
		}
		return &interceptors.Decision{Kind: interceptors.Modify, Patch: []interceptors.PatchOp{
			{Op: "replace", Path: "/call/arguments/command", Value: cmd},
		}}, nil
	}}, nil
}

// component is one process of the schedule: it can be SIGKILLed and
// started again, or stopped and continued; it keeps its downtime.
type component struct {
	name, kind string // kind: nats, worker, interceptor
	start      func(t *testing.T)
	kill       func(t *testing.T)
	process    func() *os.Process // the running process, nil when none

	mu   sync.Mutex
	down time.Duration // SIGKILL to ready again, and SIGSTOP to SIGCONT
}

func (c *component) addDown(d time.Duration) {
	c.mu.Lock()
	c.down += d
	c.mu.Unlock()
}

func (c *component) downtime() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.down
}

// crash SIGKILLs the component, waits pause, and starts it again; it
// returns its downtime (kill to ready).
func (c *component) crash(t *testing.T, pause time.Duration) time.Duration {
	t.Helper()
	begin := time.Now()
	c.kill(t)
	time.Sleep(pause) // the fault: the component is away this long
	c.start(t)
	d := time.Since(begin)
	c.addDown(d)
	return d
}

// freeze SIGSTOPs the component for hold, then SIGCONTs it.
func (c *component) freeze(t *testing.T, hold time.Duration) {
	t.Helper()
	p := c.process()
	if p == nil {
		t.Fatalf("%s: no process to stop", c.name)
	}
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP %s: %v", c.name, err)
	}
	begin := time.Now()
	time.Sleep(hold) // the fault: the component is stopped this long
	if err := p.Signal(syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT %s: %v", c.name, err)
	}
	c.addDown(time.Since(begin))
}

// natsComponent is one of the schedule's nats-server processes, called
// name.
func natsComponent(name string, n *natsNode) *component {
	return &component{name: name, kind: "nats", start: n.start, kill: n.kill, process: func() *os.Process {
		n.mu.Lock()
		defer n.mu.Unlock()
		if n.cmd == nil {
			return nil
		}
		return n.cmd.Process
	}}
}

// procSlot is a process the schedule starts again and again (a worker, the
// interceptor): every incarnation's output is kept.
type procSlot struct {
	name, path string
	env, args  []string
	ready      string // what its output says once it serves

	mu    sync.Mutex
	cur   *faultProc
	procs []*faultProc
}

// start starts a new incarnation and waits until it serves. An
// incarnation that exits while starting (its output kept: exited reports
// it) is followed by another, until one serves or 90 s have passed.
func (s *procSlot) start(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		p := startProcess(t, s.name, s.path, s.env, s.args...)
		s.mu.Lock()
		s.cur = p
		s.procs = append(s.procs, p)
		s.mu.Unlock()
		exited := false
		ok := bustest.Poll(context.Background(), time.Until(deadline), 5*time.Millisecond, func() bool {
			select {
			case <-p.done:
				exited = true
				return true
			default:
			}
			return strings.Contains(p.stderr.String(), s.ready) || strings.Contains(p.stdout.String(), s.ready)
		})
		switch {
		case !ok:
			t.Fatalf("%s did not serve within 90 s:\n%s", s.name, p.stderr.String())
		case !exited:
			return
		case time.Now().After(deadline):
			t.Fatalf("%s exited %d while starting, again and again for 90 s:\n%s%s", s.name, p.code, p.stdout.String(), p.stderr.String())
		}
		t.Logf("%s exited %d while starting: %s; starting it again", s.name, p.code, oneLine(tail(p.stderr.String(), 300)))
		time.Sleep(time.Second) // as a supervisor would, before it starts the process again
	}
}

// revive starts the slot's process again if the current incarnation
// exited by itself, and reports whether it did.
func (s *procSlot) revive(t *testing.T) bool {
	t.Helper()
	s.mu.Lock()
	p := s.cur
	s.mu.Unlock()
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		s.start(t)
		return true
	default:
		return false
	}
}

// kill SIGKILLs the current incarnation and waits for it to be gone.
func (s *procSlot) kill(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	p := s.cur
	s.cur = nil
	s.mu.Unlock()
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

func (s *procSlot) process() *os.Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return nil
	}
	return s.cur.cmd.Process
}

// exited lists the incarnations that exited by themselves (not killed by
// a signal), with their output.
func (s *procSlot) exited() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, p := range s.procs {
		select {
		case <-p.done:
			if p.code != -1 { // -1: ended by a signal, the schedule's SIGKILL
				out = append(out, fmt.Sprintf("%s exited %d:\n%s", s.name, p.code, tail(p.stderr.String(), 4000)))
			}
		default:
		}
	}
	return out
}

// logs is the output of every incarnation, in order.
func (s *procSlot) logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for i, p := range s.procs {
		fmt.Fprintf(&b, "--- %s, incarnation %d:\n%s%s", s.name, i+1, p.stdout.String(), p.stderr.String())
	}
	return b.String()
}

func (s *procSlot) component(kind string) *component {
	return &component{name: s.name, kind: kind, start: s.start, kill: s.kill, process: s.process}
}

// tail is the end of s, at most n bytes.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
