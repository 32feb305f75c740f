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
//   - TestFaultHandOffAcrossRestarts: a run cut off on definition 1 (its
//     worker SIGKILLed mid-step) while definition 2 is deployed, with the
//     nats-server SIGKILLed before and after the hand-off: the worker of
//     definition 2 hands the run to the workers of definition 1 once and
//     never runs it, observer runs --queued lists it waiting for definition
//     1, and a worker of definition 1 started later finishes it, the Bash
//     command run once.
//   - TestFaultRandomizedSchedule: the randomized fault schedule (below).
//
// # The randomized fault schedule
//
// TestFaultRandomizedSchedule runs a small fleet for 8 minutes
// (HOOKBUS_FAULT_LOAD changes it) while faults drawn at random hit every
// component, then audits the whole record. The fleet runs on a 3-node
// JetStream cluster as production deploys it: three nats-server processes
// configured by deploy/nats's own files (cluster-n1.conf, cluster-n2.conf,
// cluster-n3.conf, cluster.conf and accounts.conf, copied into a directory
// per node with only what cannot be shared on one machine rewritten in
// cluster.conf: the client, monitoring and cluster listeners go to
// 127.0.0.1 on free ports, the store directory to the test's, and the
// routes' host names n1, n2, n3 to 127.0.0.1 and their ports; server
// names, route credentials, JetStream limits, sync_interval always,
// accounts, users and permissions are the files'). Every stream and bucket
// is provisioned R3 as admin; every process connects to all three nodes as
// its own deploy user, its password (accounts.conf's) in the URLs as
// cluster.conf shows: the workers, loop submit and the submissions through
// the bus as loop, the interceptor as plugin-pii (its plugin name), the
// approver's answers as approver and the conflicting ones as alice, the
// tracker, observer replay and observer verify as auditor; every command is
// given --replicas 3. HOOKBUS_FAULT_TOPOLOGY=single runs the schedule on
// one nats-server process without users instead (JetStream on a store,
// started again on it after each SIGKILL).
//
// On it, three loop serve workers with a 4 s --lease serve two agents
// defined in agent files (worker w1 both, w2 only sched-a, w3 only
// sched-b), each a scripted model of four steps whose Bash calls append an
// execution line to calls.log under the workers' root (and print it)
// naming the worker that ran them (bash.env passes FAULT_WORKER); sched-a
// compacts its sessions every two or three runs (compaction max_tokens);
// sched-b's two calculator calls of step 2 each wait for approval (expiry
// 45 s, then rejected and the run goes on); and a remote interceptor (this
// test binary started again) registered with observer hooks add --policy
// fail on tool.before: while it is down every call is denied, never run
// unchecked. It syncs a line per request it sees to guard.log before it
// answers, and rewrites each Bash command it allows so that its execution
// line names the run and the call ("checked RUN CALL"); a command run
// without it writes "unchecked".
//
// Twelve lanes submit runs (through the bus, or a loop submit process for
// a quarter): 2 to 5 runs back to back per session, a fifth of them pairs
// submitted at once on one session. Three approvers answer sched-b's calls
// with observer approve|reject processes, by a plan drawn per run (approve,
// reject and continue, reject, or let them expire); on a run alone in its
// session it also gives the first call a conflicting second answer while
// the other call still waits, which must be refused naming the first.
// Every 1-4 s a fault is dealt from a shuffled deck, so each kind happens
// about as often: SIGKILL of a worker or the interceptor, started again
// after a pause, or SIGSTOP of one for 1-9 s, then SIGCONT (a worker
// stopped longer than its lease loses its runs to the others); and on the
// cluster, six node faults: SIGKILL of the events stream's leader, or of
// one of its followers, started again on its store after 0.5-5.5 s;
// SIGKILL of two nodes at once (the leader and a follower: no quorum until
// one is back) and of all three, started again after 0.5-5.5 s; SIGSTOP of
// a node (the leader half the time) for 10-16 s, past the Raft election
// timeout; and a slow node, stopped and continued in a duty cycle (0.1-0.8
// s stopped, 0.1-0.5 s running) for 10-20 s. On one server, SIGKILL of it
// (started again after 1-10 s) or SIGSTOP for 1-9 s. A worker or the
// interceptor that exits by itself, while starting or later, is started
// again before the next fault, as a supervisor would (the audit reports
// the exit).
//
// Halfway through, agent A is deployed anew: w2 is SIGKILLed and comes back (as w2v2) on version 2 of
// A with --replace-definition, so new runs of A go to it alone, and runs
// recorded on version 1 (cut off, or delivered to w2v2) are handed to the
// workers of version 1 and go on only on w1. The draws come from a seed
// the test logs; HOOKBUS_FAULT_SEED=N deals the same faults again (the
// timing of the load differs). The load goes on until at least 500 runs
// (400 on the cluster) were submitted (a quarter longer at most). make test-faults runs one
// schedule; HOOKBUS_FAULT_SCHEDULES=N runs N one after another (a subtest
// each, named by its seed; give go test a -timeout to match).
//
// Then the faults stop; on the cluster, every stream must have a leader
// and two current followers again within 3 minutes; everything drains
// (every run submitted ends within 10 minutes; remaining approvals are
// answered), and the stream is read back with observer replay --json and
// observer verify --json. Every run is checked
// (auditSchedule), failures collected and grouped before the test fails:
//
//   - event ids are unique; each run has exactly one terminal event in the
//     stream; its effective record (the supersede rule applied) has no two
//     events under one seq, has seqs 1..N and ends with it (a run taken
//     over by the other run of its pair may skip the seqs its run.failed
//     records as lost: appends lost in a fault that no attempt can fill,
//     each absent);
//   - every call has one tool.before and one tool.after (a recorded outcome
//     unknown has its tool.after), or, asked about, was settled by a
//     rejection or the run's end while it waited;
//   - no side effect twice: each call's Bash command ran at most once
//     (calls.log), each execution is its call's recorded result or its
//     call's outcome is recorded unknown, and every recorded Bash result
//     is one execution of that call;
//   - no run lost: every acknowledged submission (loop submit included) has
//     a terminal event, and the runs no acknowledged submission names are
//     at most the loop submit processes that failed;
//   - each run ran only on workers serving its agent on the definition it
//     started on: every run.started records the definition of an agent
//     file, the same in every attempt of the run, with no adoption; every
//     execution line names a worker serving that definition; and no worker
//     log line names a run of an agent the worker does not serve;
//   - the fail-closed hook was never bypassed: every execution line is
//     "checked" (the guard rewrote it), and every tool.before has exactly
//     one record of the guard: an allow (or modify) whose request is in
//     guard.log, or a failure with outcome failed_closed after which the
//     call was denied and did not run;
//   - a run ended done; rejected only when its plan rejected a call; or
//     failed only when another run of its session took it over: the other
//     run of its pair, or a run of a loop submit process that failed yet
//     queued it (its lane then submitted the run again);
//   - every context.assembled and every rebuilt session is a conversation a
//     provider accepts (a compaction's summary may be followed by a kept
//     prompt; in sessions where a run was taken over before its reply, a
//     prompt may follow another);
//   - approvals: each call asked about has at most one approval.resolved,
//     one unless its run ended while it waited; it is the approver's answer
//     as given (its note "first", recorded as given by the approver's
//     user), or an expiry; an answer the approver was told is recorded is
//     the one recorded; no conflicting answer was
//     accepted or recorded, and each was refused naming the first, whose
//     answer id is the one recorded;
//   - observer verify exits 0 and says every run is intact and ended: no
//     false alarm (nothing touches the record);
//   - no worker or interceptor exited by itself (an exit while starting
//     included).
//
// It logs the seed, every fault as it is dealt, and the figures: runs by
// outcome, events, attempts, superseded events, compactions, tool calls
// denied fail-closed, outcomes unknown, Bash executions against recorded
// results, approvals answered, expired and conflicting answers refused,
// faults by kind and component, downtime per component (each node's), how
// long two nodes or more were down at once, how long the cluster took to
// be whole again, runs by the
// definition they started on, hand-offs between definitions, requests
// handed back to the queue, and wall time.
//
// Each test logs its figures (runs, events, attempts, superseded events,
// Bash calls and executions, outcomes unknown, sessions rebuilt, contexts
// checked, downtimes, recovery and wall times): go test -v shows them.
package integration
