package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// row is one line of the report.
type row struct {
	name, hookbus, raw string
	// unit is the metric read from both benchmarks.
	unit string
	// perSecond turns ns/op into events per second (throughput rows).
	perSecond bool
	target    string
}

func rows() []row {
	return []row{
		{name: "intercept_rtt_1", hookbus: "BenchmarkRemoteRoundTrip", raw: "BenchmarkRawRequestReply", unit: "p50-ns", target: "≤ 1.15"},
		{name: "intercept_rtt_3", hookbus: "BenchmarkRemoteChain3", raw: "BenchmarkRawRequestReply3", unit: "p50-ns", target: "≤ 1.15"},
		{name: "inproc_hook_ns", hookbus: "BenchmarkChainOneInterceptor", raw: "BenchmarkBareFuncWithTimeout", unit: "ns/op", target: "≤ 2"},
		{name: "publish_throughput", hookbus: "BenchmarkPublish", raw: "BenchmarkRawPublishAsync", unit: "ns/op", perSecond: true, target: "≥ 0.9"},
		// The same publishing with a checkpointer following the stream in
		// the same process (a cost, measured: no target).
		{name: "publish_checkpointed", hookbus: "BenchmarkPublishCheckpointed", raw: "BenchmarkRawPublishAsync", unit: "ns/op", perSecond: true},
		{name: "replay_throughput", hookbus: "BenchmarkReplay", raw: "BenchmarkRawOrderedConsumer", unit: "ns/op", perSecond: true, target: "≥ 0.9"},
	}
}

func main() {
	results, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
	ok := report(os.Stdout, results)
	if !reportPolicy(os.Stdout, results) {
		ok = false
	}
	if !ok {
		os.Exit(1)
	}
}

// parse collects every metric of every benchmark: name (without the -N CPU
// suffix) → unit → values, one per run.
func parse(r io.Reader) (map[string]map[string][]float64, error) {
	out := map[string]map[string][]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue // not a result line
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			if out[name] == nil {
				out[name] = map[string][]float64{}
			}
			out[name][f[i+1]] = append(out[name][f[i+1]], v)
		}
	}
	return out, sc.Err()
}

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// report prints the table; it returns false if a row could not be computed.
func report(w io.Writer, results map[string]map[string][]float64) bool {
	ok := true
	fmt.Fprintln(w, "| name | hookbus | raw | ratio | target |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, r := range rows() {
		h, hok := results[r.hookbus][r.unit]
		x, xok := results[r.raw][r.unit]
		if !hok || !xok || len(h) == 0 || len(x) == 0 {
			fmt.Fprintf(w, "| %s | missing (%s %s) | missing (%s %s) | – | %s |\n", r.name, r.hookbus, r.unit, r.raw, r.unit, r.target)
			ok = false
			continue
		}
		hv, xv := median(h), median(x)
		var hs, xs string
		var ratio float64
		if r.perSecond {
			hps, xps := 1e9/hv, 1e9/xv
			hs, xs = fmt.Sprintf("%.0f events/s", hps), fmt.Sprintf("%.0f events/s", xps)
			ratio = hps / xps
		} else {
			unit := "ns"
			if r.unit == "p50-ns" {
				unit = "ns p50"
			}
			hs, xs = fmt.Sprintf("%.0f %s", hv, unit), fmt.Sprintf("%.0f %s", xv, unit)
			ratio = hv / xv
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.2f | %s |\n", r.name, hs, xs, ratio, r.target)
	}
	return ok
}
