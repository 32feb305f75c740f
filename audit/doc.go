// Package audit answers an auditor's and an operator's questions from the
// event stream alone: folds of events into views (the approvals a run
// waits for, ...) that the observer commands and the web page print. It
// reads events; it writes nothing and imports no NATS client: feed it
// events from bus.Replay, an offline store, or a test.
//
// Verifier checks that runs' records are complete and unaltered: each
// run's hash chain (events.ChainHash) and the signature on its end.
//
//	var pending audit.Approvals
//	b.Replay(ctx, bus.Filter{Stages: audit.ApprovalStages}, func(e *events.Event) error { pending.Add(e); return nil })
//	for _, p := range pending.Pending() { ... }
package audit
