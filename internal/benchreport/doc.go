// Command benchreport reads "go test -bench" output on stdin and prints
// hookbus' figures as ratios to raw nats.go measured in the same run:
//
//	| name | hookbus | raw | ratio |
//
// Each row pairs a hookbus benchmark with the raw nats.go benchmark doing the
// same work; with -count > 1 the median of the runs is used. A row whose
// benchmarks are missing from the input is reported as missing, and the
// command exits 1.
package main
