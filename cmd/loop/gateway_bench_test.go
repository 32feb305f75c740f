package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bridge"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/interceptors"
)

// BenchmarkGatewaySession posts one Claude Code session of
// BENCH_GATEWAY_EVENTS events (default 10,000: PreToolUse/PostToolUse
// pairs after SessionStart and UserPromptSubmit) to loop gateway's handler
// on the embedded server, one after another, and reports the latency of
// the first and the last thousand events side by side (p50, p99, in µs)
// with the load average, so that a cost growing with the session shows:
//
//	go test ./cmd/loop -run '^$' -bench GatewaySession -benchtime 1x
func BenchmarkGatewaySession(b *testing.B) {
	n := 10000
	if s := os.Getenv("BENCH_GATEWAY_EVENTS"); s != "" {
		fmt.Sscan(s, &n)
	}
	for range b.N {
		b.StopTimer()
		bus := bustest.StartBus(b)
		f := bridgeFlags{policy: "ignore", timeout: bridge.DefaultTimeout}
		gw, err := newGateway(f.config(bus, interceptors.NewChain(), nil), defaultBodyLimits())
		if err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(gw.handler())
		client := srv.Client()
		post := func(body string) time.Duration {
			start := time.Now()
			resp, err := client.Post(srv.URL+GatewayPath, "application/json", strings.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || bytes.Contains(out, []byte("could not record")) {
				b.Fatalf("%d %s", resp.StatusCode, out)
			}
			return time.Since(start)
		}
		const s = "bench-session"
		post(hookInput(s, "SessionStart", `, "source": "startup"`))
		post(hookInput(s, "UserPromptSubmit", `, "prompt": "go"`))
		lat := make([]time.Duration, 0, n)
		b.StartTimer()
		for i := range n {
			id := fmt.Sprintf("toolu_%05d", i/2)
			if i%2 == 0 {
				lat = append(lat, post(hookInput(s, "PreToolUse", `, "tool_name": "Bash", "tool_use_id": "`+id+`", "tool_input": {"command": "ls"}`)))
			} else {
				lat = append(lat, post(hookInput(s, "PostToolUse", `, "tool_name": "Bash", "tool_use_id": "`+id+`", "tool_input": {"command": "ls"}, "tool_response": {"stdout": "a b", "stderr": ""}`)))
			}
		}
		b.StopTimer()
		srv.Close()
		k := min(1000, n/2)
		first, last := pcts(lat[:k]), pcts(lat[n-k:])
		b.ReportMetric(first[0], "first_p50_us")
		b.ReportMetric(first[1], "first_p99_us")
		b.ReportMetric(last[0], "last_p50_us")
		b.ReportMetric(last[1], "last_p99_us")
		la, _ := os.ReadFile("/proc/loadavg")
		b.Logf("%d events: first %d p50 %.0f µs p99 %.0f µs; last %d p50 %.0f µs p99 %.0f µs; load average %s",
			n, k, first[0], first[1], k, last[0], last[1], strings.TrimSpace(string(la)))
	}
}

// pcts returns the p50 and p99 of d in µs.
func pcts(d []time.Duration) [2]float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	at := func(p float64) float64 { return float64(s[int(p*float64(len(s)-1))].Microseconds()) }
	return [2]float64{at(0.50), at(0.99)}
}
