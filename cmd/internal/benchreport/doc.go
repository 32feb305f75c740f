// Command benchreport reads "go test -bench" output on stdin and prints
// hookbus' figures as ratios to raw nats.go measured in the same run:
//
//	| name | hookbus | raw | ratio |
//
// Each row pairs a hookbus benchmark with the raw nats.go benchmark doing the
// same work; with -count > 1 the median of the runs is used. A row whose
// benchmarks are missing from the input is reported as missing, and the
// command exits 1.
//
// A second table gives policy evaluation (package policy): one decision's
// p50 and p99 at 1, 10 and 100 rules, and a temporal rule's in sessions
// of 10 and 10,000 calls.
package main
