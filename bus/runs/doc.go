// Package runs is hookbus' run queue: run requests on a JetStream work
// queue, the loop workers that take them (routed by agent and by agent
// definition), the fleet of workers and definitions they register, and the
// wake-ups of runs waiting for an approval.
//
// # Start
//
// Put a Queue on a provisioned bus (New does no I/O), submit runs on one
// side and consume them on the other:
//
//	q := runs.New(b)
//	err := q.Submit(ctx, &events.RunRequest{RunID: id, AgentID: "support", SessionID: s, Prompt: "hello"})
//
//	w, err := q.Consume(ctx, runs.ConsumerConfig{Agents: runs.Agents("support"), Concurrency: 4}, handler)
//	defer w.Drain()
//
// Submit queues a request once per run id (its Nats-Msg-Id) on
// <prefix>.run.<agent>, or on <prefix>.run.<agent>.<digest> for a run that
// must go on with one definition; a request too large for a message is
// claim-checked (RefHeader). Consume is a worker's side: durable consumers
// per agent it serves and per definition it holds, one pool of Concurrency
// slots for all of them, and a lease renewed while a run lasts. The
// handler returns what becomes of the request, as controller-runtime's
// Reconciler returns a Result: an Outcome whose Action is Done
// (acknowledged), Retry (handed back after a back-off), Leave (another
// worker holds the run now), Refuse (dead-lettered) or HandOff (queued
// for the workers of another definition), and an error saying why; an
// error never acknowledges a request:
//
//	func handler(ctx context.Context, r *events.RunRequest) (runs.Outcome, error) {
//		if err := run(ctx, r); err != nil {
//			return runs.Outcome{Then: runs.Retry}, err
//		}
//		return runs.Outcome{}, nil // Done
//	}
//
// loop serve makes one of the loop engine's worker (loop.NewWorker).
//
// # The fleet
//
// Workers register their agent definitions in a KV bucket and write their
// presence in another while they run (Fleet, FleetView): a new run goes to
// the workers of the agent's registered definition, and List says what
// waits on the queue and why (FleetView.WaitingFor). See docs/ARCHITECTURE.md,
// "Routing by agent", and docs/PROTOCOL.md, "Agent definitions".
//
// # Wake-ups
//
// A run waiting for approvals is woken at their expiry by a message
// schedule in the wakes stream (WakeAt), taken by ConsumeWakes. Queue
// implements the engine's loop.Queue (WakeAt, Resume).
//
// The bus (package bus) provisions the streams and buckets the queue uses
// and migrates a runs stream an older hookbus made; this package imports
// bus, and bus imports none of it.
package runs
