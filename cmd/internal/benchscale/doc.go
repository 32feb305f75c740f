// Command benchscale is make bench-scale: hookbus under load, with the loop
// worker, a remote interceptor and nats-server each in its own process, so
// that each one's CPU is its own.
//
// It starts "loop server" (the embedded nats-server, listening), an
// interceptor (this command re-run as "benchscale interceptor": remote.Serve of
// an allow on tool.before, registered in the registry) and "loop serve"
// workers, then measures three things and prints them as tables:
//
//   - latency below saturation: runs whose scripted model takes --model-delay
//     per call (one calculator call, two model calls), kept at 10, 100 and
//     1,000 in flight (--levels; a closed loop: each run that ends starts
//     another); p50/p99 of the interceptor round trip (hook.decided
//     latency_us) and of created-to-stored (ce-time to the stream's stored
//     timestamp), with each process' CPU over the measured window;
//   - cost per event at saturation: --sat-runs runs with no model delay on one
//     worker, events/s and CPU seconds per 1,000 events, against raw nats.go
//     jetstream PublishMsgAsync of the same messages (headers and body, fresh
//     ids) into a stream of the same configuration, in the same run;
//   - 1 vs 2 workers on the same queue, at saturation;
//
// then where the worker's time goes: go tool pprof -top of the one-worker
// saturation phase ("loop serve --cpuprofile").
//
// Start with "make bench-scale" (it builds bin/loop first), or:
//
//	go build -o bin/ ./cmd/loop && go run ./cmd/internal/benchscale --loop bin/loop
//
// CPU is read from /proc/<pid>/stat (Linux); "machine" is the busy share of
// every core from /proc/stat, other processes included.
package main
