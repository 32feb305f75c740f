// Package events is hookbus' vocabulary: the stages of an agent loop, the
// payload carried by each stage, the CloudEvent envelope, identifiers and
// NATS subjects.
//
// It does no I/O and imports no NATS package. Everything that travels on the
// bus is built here and read back here:
//
//	e, err := events.New(events.StageToolBefore, events.Meta{
//		Source: "hookbus/loop", AgentID: "support", SessionID: "s1", RunID: runID, Step: 1, Seq: 7,
//	}, events.ToolBefore{Call: call})
//	hdr, body, err := events.Encode(e)    // CloudEvents binary mode: ce-* headers + JSON body
//	back, err := events.Decode(hdr, body) // rejects malformed messages with a named error
//
// A Stage names a hook point ("tool.before"); its CloudEvent type is
// "hookbus.tool.before" and it is published on
// "<prefix>.evt.<agent>.<session>.tool.before" (see Subjects). Agent, session,
// run and plugin ids are subject tokens and are validated by ValidateID: a bad
// id is an error naming it, never a silently rewritten subject.
package events
