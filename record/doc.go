// Package record holds the rules of a run's record that every reader and
// writer shares: which events of a session count (Effective: each run's
// events in seq order, without those of an attempt that a later attempt
// superseded), what a run's record says of the run (Run, FoldRun: its
// attempts, steps, last reply, calls and their requests for a human, the
// hooks' Decisions, what waits, its end), and how a
// run's next event is numbered, chained and signed after its last stored
// one (Chain; Heads: where each run of a session stands), and how a run's
// session is read (ReadRun, Truncated).
//
// The engine (loop), the answers (record/approval), the auditor's views
// (audit), the metrics, the web page and the observer read the record
// through it, so that a call the page lists as
// waiting is one an answer can be given to; the engine, the closing of a
// run, the answers and the bridge write through Chain. It imports events
// and interceptors only: no NATS, no engine.
//
// Start with Run: Add a run's events (as stored, or Effective) and ask
// Waiting.
package record
