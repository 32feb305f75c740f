package integration

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/nats-io/nats.go"
)

// Interceptors that fail in every way a process on the other end of a NATS
// request can: killed while it holds the request, never answering, answering
// garbage. In each test the loop is a separate process (loop run --nats) on
// a server in the test process, the interceptor is registered in the
// registry as an operator would, and the run is read back with observer
// replay. Each asserts that the run ends, that the failure is recorded as
// hook.failed with the right kind, policy and outcome, and that the run's
// events are whole: one of each, numbered without gaps, terminal last.

// faultBus is an embedded server in the test process that other processes
// reach over TCP, and a provisioned bus on it.
type faultBus struct {
	url string
	nc  *nats.Conn
	b   *bus.Bus
}

func startFaultBus(t *testing.T) *faultBus {
	t.Helper()
	srv, nc := bustest.Start(t, bustest.WithListener())
	return &faultBus{url: srv.ClientURL(), nc: nc, b: bustest.Provision(t, nc)}
}

// register puts reg in the registry, where loop processes find it.
func (f *faultBus) register(t *testing.T, reg interceptors.Registration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := remote.NewRegistry(f.b).Put(ctx, reg); err != nil {
		t.Fatalf("registry put %+v: %v", reg, err)
	}
}

// replay returns the events of a session, read by observer replay --json.
func (f *faultBus) replay(t *testing.T, agent, session string) []*events.Event {
	t.Helper()
	r := run(t, "observer", "replay", "--nats", f.url, "--agent", agent, "--session", session, "--json")
	if r.code != 0 {
		t.Fatalf("observer replay: exit %d\n%s", r.code, r.stderr)
	}
	return jsonEvents(t, r.stdout)
}

// faultProc is a binary running in the background, with its output.
type faultProc struct {
	name           string
	cmd            *exec.Cmd
	stdout, stderr bustest.Buffer
	done           chan struct{}
	code           int
}

// startFaultProc starts one of the binaries; it is killed at cleanup.
func startFaultProc(t *testing.T, name string, args ...string) *faultProc {
	t.Helper()
	return startProcess(t, name, filepath.Join(bin, name), nil, args...)
}

// startProcess starts the program at path (called name in messages), its
// environment the test's with env added ("K=V"); it is killed at cleanup.
func startProcess(t *testing.T, name, path string, env []string, args ...string) *faultProc {
	t.Helper()
	p := &faultProc{name: name, done: make(chan struct{})}
	p.cmd = exec.Command(path, args...)
	p.cmd.Dir = t.TempDir()
	if len(env) > 0 {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := p.cmd.Wait()
		p.code = 0
		if ee, ok := err.(*exec.ExitError); ok {
			p.code = ee.ExitCode()
		} else if err != nil {
			p.code = -1
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// wait waits for the process to exit, failing the test after d.
func (p *faultProc) wait(t *testing.T, d time.Duration) result {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("%s still running after %v (it hangs)\nstdout %s\nstderr %s", p.name, d, p.stdout.String(), p.stderr.String())
	}
	return result{code: p.code, stdout: p.stdout.String(), stderr: p.stderr.String()}
}

var runIDOnStderr = regexp.MustCompile(`run (\S+) session `)

// loopRunID is the run id loop run printed on stderr.
func loopRunID(t *testing.T, r result) string {
	t.Helper()
	m := runIDOnStderr.FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("loop run printed no run id: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	return m[1]
}

// wholeRun returns the events of one run among evs, in seq order, and
// checks they are whole: no event twice (by id, in the whole session), the
// run's seq 1..n, exactly one terminal event and it is the last. (A publish
// sent again after a fault, foreign messages on the session's claim subject
// included, may be stored after later events of its run: readers order a
// run by seq.)
func wholeRun(t *testing.T, evs []*events.Event, runID string) []*events.Event {
	t.Helper()
	seen := map[string]bool{}
	var out []*events.Event
	for _, e := range evs {
		if seen[e.ID] {
			t.Fatalf("event %s (%s) replayed twice", e.ID, e.Stage)
		}
		seen[e.ID] = true
		if e.RunID == runID {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no event of run %s", runID)
	}
	slices.SortStableFunc(out, func(a, b *events.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	terminals := 0
	for i, e := range out {
		if e.Seq != uint64(i+1) {
			t.Fatalf("run %s: event %d (%s) has seq %d: a gap, a duplicate or out of order\n%s", runID, i, e.Stage, e.Seq, seqStages(out))
		}
		if e.Stage == events.StageRunCompleted || e.Stage == events.StageRunFailed {
			terminals++
		}
	}
	if last := out[len(out)-1].Stage; terminals != 1 || last != events.StageRunCompleted && last != events.StageRunFailed {
		t.Fatalf("run %s: %d terminal events, last event %s\n%s", runID, terminals, last, seqStages(out))
	}
	return out
}

func seqStages(evs []*events.Event) string {
	s := make([]string, len(evs))
	for i, e := range evs {
		s[i] = fmt.Sprintf("%d:%s", e.Seq, e.Stage)
	}
	return strings.Join(s, " ")
}

// decoded returns the payloads of the events of stage st.
func payloadsOf[T any](t *testing.T, evs []*events.Event, st events.Stage) []T {
	t.Helper()
	var out []T
	for _, e := range evs {
		if e.Stage != st {
			continue
		}
		var p T
		if err := e.DecodeData(&p); err != nil {
			t.Fatalf("%s %s: %v", st, e.ID, err)
		}
		out = append(out, p)
	}
	return out
}

// toolAfter returns the tool.after payload of the named tool (the demo
// script calls each tool once).
func toolAfterOf(t *testing.T, evs []*events.Event, tool string) events.ToolAfter {
	t.Helper()
	for _, p := range payloadsOf[events.ToolAfter](t, evs, events.StageToolAfter) {
		if p.Call.Name == tool {
			return p
		}
	}
	t.Fatalf("no tool.after of %s\n%s", tool, seqStages(evs))
	return events.ToolAfter{}
}

func runCompletedOf(t *testing.T, evs []*events.Event) events.RunCompleted {
	t.Helper()
	rc := payloadsOf[events.RunCompleted](t, evs, events.StageRunCompleted)
	if len(rc) != 1 {
		t.Fatalf("%d run.completed events\n%s", len(rc), seqStages(evs))
	}
	return rc[0]
}

// oneHookFailed returns the run's only hook.failed, checking who failed and
// how.
func oneHookFailed(t *testing.T, evs []*events.Event, plugin string, stage events.Stage, kind string, policy interceptors.Policy) events.HookFailed {
	t.Helper()
	failed := payloadsOf[events.HookFailed](t, evs, events.StageHookFailed)
	if len(failed) != 1 {
		t.Fatalf("%d hook.failed events, want 1: %+v", len(failed), failed)
	}
	checkHookFailed(t, failed[0], plugin, stage, kind, policy)
	t.Logf("hook.failed: %+v", failed[0])
	return failed[0]
}

func checkHookFailed(t *testing.T, f events.HookFailed, plugin string, stage events.Stage, kind string, policy interceptors.Policy) {
	t.Helper()
	outcome := interceptors.FailedOpen
	if policy == interceptors.PolicyFail {
		outcome = interceptors.FailedClosed
	}
	if f.Plugin != plugin || f.Stage != stage || f.Kind != kind || f.Policy != string(policy) || f.Outcome != outcome {
		t.Fatalf("hook.failed %+v, want plugin %s stage %s kind %s policy %s outcome %s", f, plugin, stage, kind, policy, outcome)
	}
}

// receivedSubject is where an announce-and-hang interceptor process says
// which event it holds.
func receivedSubject(plugin string) string { return "hookbustest.received." + plugin }

// An interceptor process is SIGKILLed while it holds the loop's request.
// The kill comes after the process announced the request, so the loop's
// call cannot end with no_responders: it ends at the registration's
// timeout. The policy is fail, so the tool is denied and the model is told
// why; the run completes.
func TestInterceptorFaultKilledMidRequest(t *testing.T) {
	f := startFaultBus(t)
	received := make(chan string, 4)
	sub, err := f.nc.Subscribe(receivedSubject("guard"), func(m *nats.Msg) { received <- string(m.Data) })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := f.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	f.register(t, interceptors.Registration{
		Plugin: "guard", Stage: events.StageToolBefore, Tools: "calculator", Timeout: 2 * time.Second, Policy: interceptors.PolicyFail,
	})
	ic := startInterceptor(t, f.url, "guard", "announce-and-hang")

	loop := startFaultProc(t, "loop", "run", "--nats", f.url, "--agent", "k1", "--session", "s1", "what is 6*7?")
	var eventID string
	select {
	case eventID = <-received:
	case <-loop.done:
		t.Fatalf("the loop ended before the interceptor got its request: exit %d\n%s\n%s", loop.code, loop.stdout.String(), loop.stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("the interceptor got no request\nloop: %s", loop.stderr.String())
	}
	if err := ic.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = ic.Wait()

	r := loop.wait(t, 60*time.Second)
	if r.code != 0 {
		t.Fatalf("loop run: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	evs := wholeRun(t, f.replay(t, "k1", "s1"), loopRunID(t, r))
	hf := oneHookFailed(t, evs, "guard", events.StageToolBefore, events.FailTimeout, interceptors.PolicyFail)
	decidedOnStored(t, evs, hf.EventID, eventID, events.StageToolBefore, "calculator")
	// The tool did not run: the model got the deny, a sentence saying why
	// (the error text is in hook.failed).
	calc := toolAfterOf(t, evs, "calculator")
	if !calc.Result.IsError || calc.Result.Content != "denied: guard: blocked: the policy check did not answer in time" {
		t.Fatalf("calculator result %+v, want a deny saying the check did not answer in time", calc.Result)
	}
	if len(payloadsOf[events.ToolFailed](t, evs, events.StageToolFailed)) != 0 || strings.Contains(r.stdout, "= 42") {
		t.Fatalf("the denied calculator ran: %s", r.stdout)
	}
	if !strings.Contains(r.stdout, "denied: guard: ") {
		t.Fatalf("answer %q does not carry the deny", r.stdout)
	}
	if clock := toolAfterOf(t, evs, "clock"); clock.Result.IsError {
		t.Fatalf("clock (not intercepted) failed: %+v", clock.Result)
	}
	if rc := runCompletedOf(t, evs); rc.Reason != events.ReasonDone {
		t.Fatalf("run.completed %+v", rc)
	}
	// The tool.before the interceptor held is recorded once, as decided,
	// under an id the interceptor never saw.
	var held []*events.Event
	for _, e := range evs {
		if e.Stage == events.StageToolBefore && e.Subject == "calculator" {
			held = append(held, e)
		}
		if e.ID == eventID {
			t.Fatalf("an event was stored under the id of the interception request, %s", eventID)
		}
	}
	if len(held) != 1 {
		t.Fatalf("calculator's tool.before recorded %d times", len(held))
	}
}

// An interceptor that never answers: the call ends at the registration's
// timeout (the run completes, so the loop did not wait on it), the failure
// is recorded, and with policy ignore the tool runs.
func TestInterceptorFaultNeverAnswers(t *testing.T) {
	f := startFaultBus(t)
	received := make(chan string, 4)
	sub, err := f.nc.Subscribe(receivedSubject("sleeper"), func(m *nats.Msg) { received <- string(m.Data) })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := f.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	f.register(t, interceptors.Registration{
		Plugin: "sleeper", Stage: events.StageToolBefore, Tools: "calculator", Timeout: time.Second,
	})
	startInterceptor(t, f.url, "sleeper", "announce-and-hang")

	loop := startFaultProc(t, "loop", "run", "--nats", f.url, "--agent", "n1", "--session", "s1", "what is 6*7?")
	r := loop.wait(t, 60*time.Second)
	if r.code != 0 || !strings.Contains(r.stdout, "6*7 = 42") {
		t.Fatalf("loop run: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	evs := wholeRun(t, f.replay(t, "n1", "s1"), loopRunID(t, r))
	var eventID string
	select {
	case eventID = <-received:
	default:
		t.Fatal("the interceptor never got the request: the failure would not be a timeout")
	}
	hf := oneHookFailed(t, evs, "sleeper", events.StageToolBefore, events.FailTimeout, interceptors.PolicyIgnore)
	decidedOnStored(t, evs, hf.EventID, eventID, events.StageToolBefore, "calculator")
	if calc := toolAfterOf(t, evs, "calculator"); calc.Result.IsError || calc.Result.Content != "42" {
		t.Fatalf("calculator result %+v, want 42 (fail-open)", calc.Result)
	}
	if rc := runCompletedOf(t, evs); rc.Reason != events.ReasonDone {
		t.Fatalf("run.completed %+v", rc)
	}
}

// Replies that are not decisions, from raw nats.go responders: a body that
// is not JSON on tool.before, and a mock on step.started (a decision that
// stage does not accept). Both are bad_reply failures naming what is
// wrong; policy ignore goes on, policy fail denies the tool call (stops the
// run on step.started, which accepts no deny).
func TestInterceptorFaultGarbageReply(t *testing.T) {
	cases := []struct {
		name   string
		stage  events.Stage
		reply  string
		policy interceptors.Policy
		// what the failure's error says
		says []string
		// failures recorded (step.started is intercepted at each step)
		failures int
		check    func(t *testing.T, r result, evs []*events.Event)
	}{
		{
			name: "not json ignore", stage: events.StageToolBefore, reply: "not json", policy: interceptors.PolicyIgnore,
			says: []string{"invalid character", `"not json"`}, failures: 1,
			check: func(t *testing.T, r result, evs []*events.Event) {
				if r.code != 0 || !strings.Contains(r.stdout, "6*7 = 42") {
					t.Fatalf("loop run: exit %d %q", r.code, r.stdout)
				}
				if rc := runCompletedOf(t, evs); rc.Reason != events.ReasonDone {
					t.Fatalf("run.completed %+v", rc)
				}
			},
		},
		{
			name: "not json fail", stage: events.StageToolBefore, reply: "not json", policy: interceptors.PolicyFail,
			says: []string{"invalid character", `"not json"`}, failures: 1,
			check: func(t *testing.T, r result, evs []*events.Event) {
				calc := toolAfterOf(t, evs, "calculator")
				if r.code != 0 || !calc.Result.IsError || !strings.HasPrefix(calc.Result.Content, "denied: garbage: ") ||
					!strings.Contains(calc.Result.Content, "could not be read") || strings.Contains(r.stdout, "= 42") {
					t.Fatalf("loop run: exit %d %q; calculator %+v", r.code, r.stdout, calc.Result)
				}
				if !strings.Contains(r.stdout, "denied: garbage: ") {
					t.Fatalf("answer %q does not carry the deny", r.stdout)
				}
			},
		},
		{
			name: "mock on step.started ignore", stage: events.StageStepStarted, policy: interceptors.PolicyIgnore,
			reply: `{"decision":"mock","data":{"content":"x"}}`, says: []string{"does not accept mock"}, failures: 2,
			check: func(t *testing.T, r result, evs []*events.Event) {
				if r.code != 0 || !strings.Contains(r.stdout, "6*7 = 42") {
					t.Fatalf("loop run: exit %d %q", r.code, r.stdout)
				}
			},
		},
		{
			name: "mock on step.started fail", stage: events.StageStepStarted, policy: interceptors.PolicyFail,
			reply: `{"decision":"mock","data":{"content":"x"}}`, says: []string{"does not accept mock"}, failures: 1,
			check: func(t *testing.T, r result, evs []*events.Event) {
				rc := runCompletedOf(t, evs)
				if r.code != 3 || rc.Reason != events.ReasonStopped || !strings.Contains(rc.Detail, "garbage") || !strings.Contains(rc.Detail, "could not be read") {
					t.Fatalf("loop run: exit %d; run.completed %+v", r.code, rc)
				}
				if n := len(payloadsOf[events.ModelResponded](t, evs, events.StageModelResponded)); n != 0 {
					t.Fatalf("the model was called %d times after a fail-closed step.started", n)
				}
			},
		},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := startFaultBus(t)
			subj, err := f.b.Subjects().Hook(tc.stage, "garbage")
			if err != nil {
				t.Fatal(err)
			}
			var calls atomic.Int64
			sub, err := f.nc.QueueSubscribe(subj, "garbage", func(m *nats.Msg) {
				calls.Add(1)
				_ = m.Respond([]byte(tc.reply))
			})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = sub.Unsubscribe() }()
			if err := f.nc.Flush(); err != nil {
				t.Fatal(err)
			}
			reg := interceptors.Registration{Plugin: "garbage", Stage: tc.stage, Policy: tc.policy, Timeout: 10 * time.Second}
			if tc.stage == events.StageToolBefore {
				reg.Tools = "calculator"
			}
			f.register(t, reg)

			agent := fmt.Sprintf("g%d", i)
			r := run(t, "loop", "run", "--nats", f.url, "--agent", agent, "--session", "s1", "what is 6*7?")
			evs := wholeRun(t, f.replay(t, agent, "s1"), loopRunID(t, r))
			failed := payloadsOf[events.HookFailed](t, evs, events.StageHookFailed)
			if len(failed) != tc.failures || calls.Load() != int64(tc.failures) {
				t.Fatalf("%d hook.failed events, %d replies sent, want %d: %+v", len(failed), calls.Load(), tc.failures, failed)
			}
			for _, hf := range failed {
				t.Logf("hook.failed: %+v", hf)
				checkHookFailed(t, hf, "garbage", tc.stage, events.FailBadReply, tc.policy)
				for _, s := range tc.says {
					if !strings.Contains(hf.Error, s) {
						t.Fatalf("hook.failed error %q does not say %q", hf.Error, s)
					}
				}
			}
			if n := len(payloadsOf[events.HookDecided](t, evs, events.StageHookDecided)); n != 0 {
				t.Fatalf("%d hook.decided events for garbage replies", n)
			}
			tc.check(t, r, evs)
		})
	}
}

// decidedOnStored checks that a hook record names the stored event of
// stage for tool, and that the interceptor's request carried another id:
// the id an event is stored under cannot be known from its interception
// request (so no interceptor can store a forgery under it first).
func decidedOnStored(t *testing.T, evs []*events.Event, decidedOn, requestID string, stage events.Stage, tool string) {
	t.Helper()
	var stored *events.Event
	for _, e := range evs {
		if e.Stage == stage && e.Subject == tool {
			stored = e
		}
	}
	if stored == nil {
		t.Fatalf("no %s of %s stored", stage, tool)
	}
	if decidedOn != stored.ID {
		t.Fatalf("the hook record is about event %s, the stored %s is %s", decidedOn, stage, stored.ID)
	}
	if requestID == stored.ID {
		t.Fatalf("the interceptor's request carried the id %s the event was stored under", requestID)
	}
}
