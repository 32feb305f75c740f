// Package record holds the rules of a run's record that every reader and
// writer shares: which events of a session count (Effective: each run's
// events in seq order, without those of an attempt that a later attempt
// superseded) and what a run's record says of its calls' requests for a
// human (Run: the calls asked, their answers, which of them wait).
//
// The engine (loop), the auditor's views (audit), the web page and the
// observer read the record through it, so that a call the page lists as
// waiting is one an answer can be given to. It imports events only: no
// NATS, no engine.
//
// Start with Effective on a session's events in stream order, then fold a
// run's with Run.Add and ask Run.Waiting.
package record
