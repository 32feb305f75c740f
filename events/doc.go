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
// Encode and Decode read and write the headers directly and fall back to
// sdk-go's binding for what they are not sure of (structured mode, unusual
// headers); Event.Validate is the one set of rules both apply.
//
// A Stage names a hook point ("tool.before"); its CloudEvent type is
// "hookbus.tool.before" and it is published on
// "<prefix>.evt.<agent>.<session>.tool.before" (see Subjects). Agent, session,
// run and plugin ids are subject tokens and are validated by ValidateID: a bad
// id is an error naming it, never a silently rewritten subject. Everything
// about a stage (its group, the decisions it accepts, whether it is
// privileged, records a failure or ends a run, its payload type) is one
// line of the table in stage.go. Readers take a payload typed from it:
//
//	p, err := events.Data[events.ToolBefore](e) // an error wrapping ErrPayload if e is not a tool.before or does not decode
//
// A tool call carries, beside its native name and arguments, its Action:
// what it does (an ActionKind: shell, file.read, web.fetch, mcp, ...) and
// the fields rules read (command, paths, url, MCP server and tool), the same
// for every harness. NewAction holds one table per harness (action.go):
//
//	call = call.WithAction(events.HarnessGemini) // run_shell_command -> {"kind":"shell","command":"..."}
package events
