package policy_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/policy"
)

// rulesPolicy is a policy of n validations over a shell call's command,
// every one of which holds (so each decision evaluates all n).
func rulesPolicy(n int) string {
	var b strings.Builder
	b.WriteString("name: bench\nmatch:\n  kinds: [shell]\nvalidations:\n")
	for i := range n {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, "- expression: '!action.command.contains(\"forbidden-%d\")'\n", i)
		case 1:
			fmt.Fprintf(&b, "- expression: '!action.command.matches(\"^rm-%d\\\\s+-rf\")'\n", i)
		case 2:
			fmt.Fprintf(&b, "- expression: 'agent != \"blocked-%d\" || harness != \"codex\"'\n", i)
		case 3:
			fmt.Fprintf(&b, "- expression: '!action.paths.exists(p, p.startsWith(\"/etc/%d\"))'\n", i)
		}
	}
	return b.String()
}

// measure runs f b.N times and reports the median and 99th percentile of
// one call in ns: wall-clock (p50-ns, p99-ns) and the CPU time of the
// thread making it (cpu-p50-ns, cpu-p99-ns), which on a shared machine
// leaves out the time other processes held the CPU.
func measure(b *testing.B, f func()) {
	b.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	lat := make([]time.Duration, 0, b.N)
	cpu := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c0 := threadCPU()
		t0 := time.Now()
		f()
		lat = append(lat, time.Since(t0))
		cpu = append(cpu, threadCPU()-c0)
	}
	b.StopTimer()
	for _, m := range []struct {
		d    []time.Duration
		unit string
	}{{lat, ""}, {cpu, "cpu-"}} {
		slices.Sort(m.d)
		b.ReportMetric(float64(m.d[len(m.d)/2].Nanoseconds()), m.unit+"p50-ns")
		b.ReportMetric(float64(m.d[len(m.d)*99/100].Nanoseconds()), m.unit+"p99-ns")
	}
}

// threadCPU is the CPU time the calling thread has used.
func threadCPU() time.Duration {
	const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

// BenchmarkDecision is one decision as the chain asks it of a policy of
// 1, 10 and 100 rules on a shell call (every rule evaluated): the
// interceptor reads the input from the event and evaluates.
func BenchmarkDecision(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			c := compile(b, rulesPolicy(n))
			ev := toolBefore(b, events.HarnessClaude, "a", "s1", "Bash", `{"command":"git status && ls -la /tmp"}`)
			req := &interceptors.Request{Stage: ev.Stage, Event: ev}
			ic := c.Interceptor()
			ctx := context.Background()
			measure(b, func() {
				d, err := ic.Intercept(ctx, req)
				if err != nil || d == nil || d.Kind != interceptors.Allow {
					b.Fatalf("%v %+v", err, d)
				}
			})
		})
	}
}

// BenchmarkEvaluate is the same evaluation with its steps recorded, as
// explain asks it.
func BenchmarkEvaluate(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			c := compile(b, rulesPolicy(n))
			ev := toolBefore(b, events.HarnessClaude, "a", "s1", "Bash", `{"command":"git status && ls -la /tmp"}`)
			in, err := policy.InputFrom(ev, "")
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			measure(b, func() {
				res, err := c.Evaluate(ctx, in)
				if err != nil || res.Decision == nil || res.Decision.Kind != "allow" || len(res.Steps) != n {
					b.Fatalf("%v %+v", err, res)
				}
			})
		})
	}
}

const temporal = `
name: no-exfil
match:
  kinds: [web.fetch]
validations:
- name: after-secrets
  expression: '!session.seen("file.read", "(^|/)\\.env$|/\\.ssh/") && session.count("web.*", duration("1h")) < 100000'
`

// BenchmarkTemporal is one decision of a rule over the session's history
// (session.seen and session.count with Memory) in sessions of 10 and
// 10,000 earlier calls: the cost is the same.
func BenchmarkTemporal(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprintf("session=%d", n), func(b *testing.B) {
			mem := policy.NewMemory()
			c := compile(b, temporal, policy.WithHistory(mem))
			for i := range n {
				var ev *events.Event
				if i%2 == 0 {
					ev = toolBefore(b, events.HarnessClaude, "a", "s1", "Read", fmt.Sprintf(`{"file_path":"/src/f%d.go"}`, i))
				} else {
					ev = toolBefore(b, events.HarnessClaude, "a", "s1", "WebFetch", fmt.Sprintf(`{"url":"https://example.com/%d"}`, i))
				}
				mem.Record(ev)
			}
			// A new call each time, recorded as the session goes on.
			next := make([]*events.Event, b.N)
			for i := range next {
				next[i] = toolBefore(b, events.HarnessClaude, "a", "s1", "WebFetch", `{"url":"https://example.com/next"}`)
			}
			ctx := context.Background()
			i := 0
			measure(b, func() {
				ev := next[i]
				i++
				mem.Record(ev)
				in, _ := policy.InputFrom(ev, "")
				res, err := c.Evaluate(ctx, in)
				if err != nil || res.Decision == nil || res.Decision.Kind != "allow" {
					b.Fatalf("%v %+v", err, res)
				}
			})
		})
	}
}

// BenchmarkCompile is what loading a policy of 10 rules costs (a process
// that handles one event compiles every stored policy).
func BenchmarkCompile(b *testing.B) {
	ps, err := policy.Parse("bench.yaml", []byte(rulesPolicy(10)))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := policy.Compile(ps[0]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPolicies is one call decided by 10 policies of one rule each,
// their interceptors called in turn as the chain calls them: each reading
// the call from the payload, and sharing one read (WithInputs).
func BenchmarkPolicies(b *testing.B) {
	for _, shared := range []bool{false, true} {
		b.Run(fmt.Sprintf("shared=%v", shared), func(b *testing.B) {
			inputs := policy.NewInputs()
			var ics []interceptors.Interceptor
			for i := range 10 {
				var opts []policy.Option
				if shared {
					opts = append(opts, policy.WithInputs(inputs))
				}
				src := strings.Replace(rulesPolicy(1), "name: bench", fmt.Sprintf("name: bench-%d", i), 1)
				ics = append(ics, compile(b, src, opts...).Interceptor())
			}
			ev := toolBefore(b, events.HarnessClaude, "a", "s1", "Bash", `{"command":"git status && ls -la /tmp"}`)
			req := &interceptors.Request{Stage: ev.Stage, Event: ev}
			ctx := context.Background()
			measure(b, func() {
				for _, ic := range ics {
					if d, err := ic.Intercept(ctx, req); err != nil || d == nil || d.Kind != interceptors.Allow {
						b.Fatalf("%v %+v", err, d)
					}
				}
			})
		})
	}
}
