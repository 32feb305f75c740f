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
