package main

import (
	"fmt"
	"io"
)

// policyRow is one line of the policy section: a benchmark's median p50
// and p99 of one decision, wall-clock and the deciding thread's CPU time
// (which leaves out the time other processes held the CPU).
type policyRow struct {
	name, bench, target string
}

// Policy evaluation's targets: at 100 rules, p50 ≤ 20 µs and p99 ≤ 100 µs;
// a temporal rule's cost flat in the session's length.
const (
	policyP50Target = 20_000  // ns
	policyP99Target = 100_000 // ns
	flatTarget      = 1.5     // p50 at 10,000 calls over p50 at 10
)

func policyRows() []policyRow {
	return []policyRow{
		{"policy_rules_1", "BenchmarkDecision/rules=1", ""},
		{"policy_rules_10", "BenchmarkDecision/rules=10", ""},
		{"policy_rules_100", "BenchmarkDecision/rules=100", "p50 ≤ 20 µs, p99 ≤ 100 µs"},
		{"policy_temporal_10", "BenchmarkTemporal/session=10", ""},
		{"policy_temporal_10000", "BenchmarkTemporal/session=10000", fmt.Sprintf("p50 ≤ %.1f × temporal_10's", flatTarget)},
	}
}

// reportPolicy prints the policy section: one decision's latency at 1,
// 10 and 100 rules, and a temporal rule's in sessions of 10 and 10,000
// calls (the ratio shows it flat). It returns false if a row is missing.
func reportPolicy(w io.Writer, results map[string]map[string][]float64) bool {
	ok := true
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| policy evaluation | p50 | p99 | CPU p50 / p99 | target |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	p50 := map[string]float64{}
	for _, r := range policyRows() {
		a, aok := results[r.bench]["p50-ns"]
		b, bok := results[r.bench]["p99-ns"]
		if !aok || !bok || len(a) == 0 || len(b) == 0 {
			fmt.Fprintf(w, "| %s | missing (%s) | – | – | %s |\n", r.name, r.bench, r.target)
			ok = false
			continue
		}
		p50[r.name] = median(a)
		cpu := "–"
		c50, ok50 := results[r.bench]["cpu-p50-ns"]
		c99, ok99 := results[r.bench]["cpu-p99-ns"]
		if ok50 && ok99 && len(c50) > 0 && len(c99) > 0 {
			cpu = fmt.Sprintf("%.0f / %.0f ns", median(c50), median(c99))
		}
		target := r.target
		if r.name == "policy_temporal_10000" {
			if base, ok := p50["policy_temporal_10"]; ok && base > 0 {
				target = fmt.Sprintf("%s (%.2f)", target, median(a)/base)
			}
		}
		fmt.Fprintf(w, "| %s | %.0f ns | %.0f ns | %s | %s |\n", r.name, median(a), median(b), cpu, target)
	}
	return ok
}
