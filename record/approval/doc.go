// Package approval records answers to a run's tool calls waiting for a
// human, in the run's record, without the engine: the client that answers
// (observer approve|reject, the web page, any program) appends the
// approval.resolved itself (Answer), fenced on the session as it read it,
// so the first answer wins and a later one is refused at once, naming the
// first, whether or not a worker runs. Workers see the answer in the record
// and resume the run (loop.Resumer), and record the expiry of calls nobody
// answered in time (Expire). See docs/PROTOCOL.md, "Approvals".
//
// It reads a run as the engine does (record.FoldRun): what waits is
// record.Run's rule, the one the page, the observer and the engine share;
// the answers are numbered and chained by record.Chain. It
// imports events and record only: no NATS, no engine.
//
// Start with Answer:
//
//	res, err := approval.Answer(ctx, approval.Deps{History: b, Recorder: b}, approval.Request{
//		AgentID: "ops", SessionID: "s1", RunID: run, Action: events.ActionApprove,
//		By: events.Actor{Identity: "alice", Writer: "alice"},
//	})
package approval
