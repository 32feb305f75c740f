// Package integration holds hookbus' end-to-end tests: the real loop and
// observer binaries, built once per test run, against real nats-servers
// (embedded in-process, or the loop's own embedded server in another
// process). Nothing here mocks NATS.
//
// # The hard-fault runs (make test-faults)
//
// The tests named TestFault... run only with HOOKBUS_FAULTS=1 (make
// test-faults; make test skips them). In each, every component is an OS
// process of its own: nats-server (built from the version go.mod names, with
// a configuration the test writes: JetStream on a store directory, and for
// the cluster three nodes with routes), the workers (loop serve), foreground
// runs (loop run), interceptors (this test binary started again), and the
// reader (observer replay --json). Faults are SIGKILL, never a graceful
// shutdown: no flush, no leader hand-over, no drain.
//
// The load is loadScript: four steps, a model reply every 700 ms, four tool
// calls per run, two of them Bash commands that count their executions in
// calls.log under the workers' root (a mark per execution, which the
// command also prints, so a recorded result names its execution). Two
// workers take four runs at a time each, with a 6 s lease, 48 runs per
// batch. After the damage the whole stream is read back with observer
// replay --json and checked run by run (auditRuns, checkSessions,
// checkExecutions):
//   - each run has exactly one terminal event in the stream, run.completed
//     with reason done;
//   - its effective record (the supersede rule of docs/PROTOCOL.md applied,
//     as any reader does; the figures say how many events it dropped) has
//     seqs 1..N, no gap, no duplicate, the terminal last, and exactly one
//     tool.before and one tool.after per tool call; event ids are unique;
//   - no tool call ran twice: every recorded Bash result is one execution
//     in calls.log, and an execution without a recorded result is paid for
//     by a call recorded as outcome unknown (tool.failed unknown=true) made
//     before it;
//   - every session rebuilt with loop.RebuildSession is a conversation a
//     provider accepts (each tool call answered once, right after it, no
//     two assistant or user turns in a row) holding each run once; every
//     context.assembled gave the model such a conversation of the expected
//     length, and a follow-up run in each session whose run was resumed
//     (and in four others) is given exactly the earlier run.
//
// What each test does to it:
//   - TestFaultServerKilledAndRestarted: the only nats-server is SIGKILLed
//     once a quarter of the runs ended, and started again on its store after
//     3 s, 12 s and 60 s; then 60 s again with workers whose outage bound is
//     20 s (--outage 20s), so their attempts stop unrecorded, with no
//     run.failed, and the runs are taken up again after the restart.
//   - TestFaultClusterLeaderKilled: a 3-node cluster, streams R3; in each of
//     three trials per stream the node leading HOOKBUS_EVENTS (then
//     HOOKBUS_RUNS) is SIGKILLed mid-load and started again after 5 s; while
//     the events leader dies a foreground loop run is mid-run and exits 0
//     with its answer.
//   - TestFaultWorkerKilledWhileToolAfterInterceptorPending: a worker dies
//     while a slow tool.after interceptor (3 s, another process) holds a
//     result: the stream holds tool.result, the resumed run asks the
//     interceptor again about it, and the tool ran once.
//   - TestFaultWorkerKilledWhileToolRuns: a worker dies while a slow Bash
//     command runs: the resumed run records the outcome unknown
//     (tool.failed unknown=true) and the tool ran once.
//   - TestFaultRunRequestNamingAnotherAgent: a request on hookbus.run.demo
//     naming agent victim is refused by a loop serve --agent demo worker:
//     nothing runs, nothing is written under hookbus.evt.victim, and a dead
//     letter on hookbus.dlq.hookbus-workers gives the reason.
//   - TestFaultInterceptorForgesTheRecord: an interceptor stores a forged
//     tool.before under its request's ce-id before it allows: the loop's
//     own tool.before is stored, with the real arguments, under another id,
//     hook.decided names it, and the run's record is whole without the
//     forgery.
//   - TestFaultInterceptorClockAhead: an interceptor whose clock runs 10
//     minutes ahead (its deadline header moved into the past) is called and
//     its deny applied, never skipped.
//   - TestFaultCheckpointerKilled: observer checkpointer, following a
//     worker's runs, is SIGKILLed three times with messages delivered and
//     not checkpointed, and started again: its checkpoints form one chain
//     over every message, and the stream verifies against them.
//
// Each test logs its figures (runs, events, attempts, superseded events,
// Bash calls and executions, outcomes unknown, sessions rebuilt, contexts
// checked, downtimes, recovery and wall times): go test -v shows them.
package integration
