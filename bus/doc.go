// Package bus is hookbus' log over NATS JetStream: a connection to a
// nats-server, provisioning of every stream and bucket, publishing events
// (asynchronous, write-ahead, fenced appends, and a per-run flush barrier),
// the claim check of large payloads, durable observers with back-off and
// dead letters, and replay and tail over ordered consumers.
//
// The rest of hookbus over NATS is built on a Bus, each in a package of its
// own that bus does not import:
//
//   - bus/remote: interceptors over NATS: Serve (a plugin), Client and
//     Register (a loop), the registry, trust grants, the kill switch,
//     SyncHooks, the decision cache, shadow records.
//   - bus/runs: the run queue (Submit, Consume), its routing by agent and
//     definition, the fleet, wake-ups of waiting runs.
//   - bus/budgets: shared budgets.
//
// # Start
//
// Connect to a server (or run one in the process with bus/embedded), put a
// Bus on the connection and provision it once:
//
//	nc, err := bus.Connect("nats://127.0.0.1:4222") // or embedded.Start(...) and srv.Connect()
//	b, err := bus.New(nc)                           // no I/O
//	err = b.Provision(ctx)                          // idempotent: streams, KV buckets, object store
//
// Tests use bus/bustest instead: bustest.StartBus(t) is all of the above on
// a t.TempDir() store, shut down by t.Cleanup.
//
// # Write
//
// Publish is asynchronous and returns once the message is queued;
// PublishSync returns after JetStream stored the event (write-ahead: a
// tool.before is stored before the tool runs); Flush(ctx, runID) waits for
// every earlier Publish of a run and reports the first that failed after
// its retries. Every message carries Nats-Msg-Id = event id, so a retry is
// stored once.
//
// A loop attempt owns its session: it claims it (Claim, Reclaim) and appends
// fenced (Append, AppendSync), so that a newer claim stops an older
// attempt's appends (ErrFenced); AppendAfter and AppendAfterAs append when
// the session is as the caller read it.
//
// # Read
//
// Observe runs a durable consumer: explicit acks, bounded pending acks,
// back-off between redeliveries, and a dead-letter subject
// (<prefix>.dlq.<durable>) once the deliveries are used up. Replay reads
// what is stored (by agent, session, run, stage and time) and returns; Tail
// follows new events; SessionEvents returns a session in order; WaitRun
// waits for a run's terminal event. Messages on the event subjects that are
// not hookbus events are skipped, counted and logged, never a crash.
//
// # Large payloads
//
// An event too large for one message (the server's max_payload, 1 MiB by
// default, or WithMaxPayload when smaller) is claim-checked: Publish and
// PublishSync store its data in the payloads object store first, under
// ObjectName ("evt/<event id>/<SHA-256 of the data>": the same event is the
// same object, never overwritten), then send the event with ce-dataref =
// "<bucket>/<name>" and an empty body. Observe, Replay, Tail, SessionEvents
// and WaitRun fetch the data back before handing the event over (DataRef
// stays set, so an auditor sees it was claim-checked); an event whose object
// is gone is handed over without data, counted (Unfetched) and logged, and
// e.DecodeData names the reference. bus/remote claim-checks interception
// requests the same way (a reply cannot be: a decision that modifies a
// large payload should send a patch), and bus/runs large run requests.
// FetchData reads the data of an event obtained otherwise (a dead letter).
// The object store's TTL is the events' max age (WithEventsMaxAge).
//
// # Assets
//
// Provision makes every asset of the prefix, those the packages built on
// the bus use included, so an operator has one call (observer provision);
// CheckProvisioned checks them with read-only rights. With the default
// prefix "hookbus": streams HOOKBUS_EVENTS (hookbus.evt.>, limits
// retention, file storage, duplicate window), HOOKBUS_RUNS (hookbus.run.>,
// work queue, no message schedules), HOOKBUS_WAKES (hookbus.wake.>, the
// approvals' wake-ups: the only stream with message schedules) and
// HOOKBUS_DLQ (hookbus.dlq.>); KV buckets hookbus_hooks, hookbus_trust,
// hookbus_decisions (the prompt hooks' decision cache), hookbus_budgets,
// hookbus_agents (the fleet's registered agent definitions) and
// hookbus_workers (the live workers); object store hookbus_payloads.
// Another prefix derives its own names (see Names), so several hookbus
// installations can share one NATS account.
//
// # Answers to approvals
//
// A client answering an approval records it itself (approval.Answer
// over a Bus: SessionEvents to read, AppendAfterAs to append on the
// writer's subject, WhoAmI for the writer). See docs/PROTOCOL.md,
// "Approvals", and docs/SECURITY.md.
//
// bus links no server code: the in-process nats-server (and OpenStore, to
// read a stopped server's store directory) is package bus/embedded.
package bus
