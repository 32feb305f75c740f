package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
BenchmarkPublish-2            	  100000	      2000 ns/op	     512 B/op	       6 allocs/op
BenchmarkPublish-2            	  100000	      3000 ns/op	     512 B/op	       6 allocs/op
BenchmarkPublish-2            	  100000	      2500 ns/op	     512 B/op	       6 allocs/op
BenchmarkRawPublishAsync-2    	  100000	      2000 ns/op
BenchmarkRemoteRoundTrip-2    	   10000	     60000 ns/op	     55000 p50-ns
BenchmarkRawRequestReply-2    	   10000	     50000 ns/op	     50000 p50-ns
PASS
ok  	github.com/hookbus/hookbus/bus	12.3s
`

func TestReport(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if got := median(res["BenchmarkPublish"]["ns/op"]); got != 2500 {
		t.Fatalf("median publish ns/op = %v", got)
	}
	var out strings.Builder
	if report(&out, res) {
		t.Fatal("report with missing rows said ok")
	}
	s := out.String()
	for _, want := range []string{
		"| name | hookbus | raw | ratio | target |",
		"| publish_throughput | 400000 events/s | 500000 events/s | 0.80 | ≥ 0.9 |",
		"| intercept_rtt_1 | 55000 ns p50 | 50000 ns p50 | 1.10 | ≤ 1.15 |",
		"| replay_throughput | missing",
		"| publish_checkpointed | missing",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
}

const policySample = `BenchmarkDecision/rules=1-2   	 20000	 3000 ns/op	 2500 cpu-p50-ns	 8000 cpu-p99-ns	 2000 p50-ns	 9000 p99-ns
BenchmarkDecision/rules=100-2 	 20000	 20000 ns/op	 16000 cpu-p50-ns	 50000 cpu-p99-ns	 15000 p50-ns	 60000 p99-ns
BenchmarkDecision/rules=100-2 	 20000	 20000 ns/op	 17000 cpu-p50-ns	 70000 cpu-p99-ns	 17000 p50-ns	 80000 p99-ns
BenchmarkTemporal/session=10-2 	 20000	 9000 ns/op	 4000 p50-ns	 9000 p99-ns
BenchmarkTemporal/session=10000-2 	 20000	 9000 ns/op	 4400 p50-ns	 9900 p99-ns
`

func TestReportPolicy(t *testing.T) {
	res, err := parse(strings.NewReader(policySample))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if reportPolicy(&out, res) {
		t.Fatal("report with a missing row said ok")
	}
	s := out.String()
	for _, want := range []string{
		"| policy evaluation | p50 | p99 | CPU p50 / p99 | target |",
		"| policy_rules_1 | 2000 ns | 9000 ns | 2500 / 8000 ns |  |",
		"| policy_rules_10 | missing (BenchmarkDecision/rules=10)",
		"| policy_rules_100 | 16000 ns | 70000 ns | 16500 / 60000 ns | p50 ≤ 20 µs, p99 ≤ 100 µs |",
		"| policy_temporal_10000 | 4400 ns | 9900 ns | – | p50 ≤ 1.5 × temporal_10's (1.10) |",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
}
