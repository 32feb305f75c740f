// Package audit answers an auditor's and an operator's questions from the
// event stream alone: folds of events into views that the observer
// commands print and a web page shows. It reads events; it writes nothing
// and imports no NATS client: feed it events from bus.Replay, an offline
// store, or a test.
//
// Every view is a fold fed event by event (Add), in stream order, so it
// works on a stream of millions of events and keeps only what it shows:
//
//   - Runs: a RunSummary per run (agent, session, lineage, start,
//     duration, steps, status, usage).
//   - Sessions: a SessionSummary per session (runs, last activity, the
//     last run's status).
//   - Show: the RunTree of one run, named by its id or a unique prefix:
//     steps, model calls, tool calls and their results, every
//     interceptor's decision (its patch as a Change of the payload),
//     approvals, compactions, and the sub-agent runs it called nested.
//   - Stats: a PluginStats per plugin and stage (calls, latency
//     percentiles, decisions, failures by kind, failed open or closed).
//   - Approvals: the tool calls waiting for a human.
//   - Verifier: whether each run's record is complete and unaltered (its
//     hash chain, events.ChainHash, and the signature on its end): a
//     RunVerdict per run, naming what was removed, inserted, altered or
//     reordered.
//   - Before: an event's payload as it was before its interceptors, where
//     the record holds it; Show's changes, the web page's diffs and the
//     shadow backtest (audit/backtest) replay the recorded patches over it.
//
// The values carry json tags: the same values serve observer's --json and
// a web UI.
//
//	var runs audit.Runs
//	b.Replay(ctx, bus.Filter{Agent: "demo"}, func(e *events.Event) error { runs.Add(e); return nil })
//	for _, r := range runs.List() { fmt.Println(r.RunID, r.Status, r.Steps) }
//
//	show := audit.NewShow("01KAB3C4D5E6") // a run id or a prefix of one
//	b.Replay(ctx, bus.Filter{}, func(e *events.Event) error { show.Add(e); return nil })
//	tree, err := show.Tree(show.Runs()[0])
//
// audittest gives tests a recorded multi-run stream.
package audit
