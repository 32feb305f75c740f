package policy_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
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
// one call, in ns.
func measure(b *testing.B, f func()) {
	b.Helper()
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		f()
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkEvaluate is one decision of a policy of 1, 10 and 100 rules
// on a shell call (every rule evaluated).
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
				if err != nil || res.Decision == nil || res.Decision.Kind != "allow" {
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
			ctx := context.Background()
			measure(b, func() {
				// A new call each time, recorded as the session goes on.
				ev := toolBefore(b, events.HarnessClaude, "a", "s1", "WebFetch", `{"url":"https://example.com/next"}`)
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
