// Package history answers what policies ask of the record, over a bus:
// policy.History shared by every worker and the coding-agent bridge.
//
// # Start
//
// Give a History to the policies a worker or the bridge compiles (New does
// no I/O; the counters stream is provisioned by bus.Provision):
//
//	h := history.New(b)
//	c, err := policy.Compile(p, policy.WithHistory(h))
//
// session.count and session.seen read the session's earlier tool calls
// (its tool.before events that carry an action) from the events stream.
// A History keeps each session it was asked about folded (the calls and
// each question's answer so far, up to the stream sequence read; the
// least recently asked about dropped past WithSessions), and catches it up
// at every question by reading only what was stored since, up to the
// stream leader's last sequence: a question costs one request when
// nothing new was recorded, whatever the session's length, and another
// worker's calls are seen at the next question.
//
// counters.* are fleet-wide sums in the counters stream (JetStream
// counters, nats-server 2.12 or later): a window is split into slots
// (WithSlots), Add adds to the current slot on the server, and Counter
// sums the slots the window overlaps. Every worker's Adds sum exactly.
//
// When the bus cannot answer, every method returns an error wrapping
// ErrUnavailable, and the policy's failurePolicy decides. See
// docs/POLICIES.md, "Rules over history", and docs/PROTOCOL.md, "Policy
// counters".
package history
