// Package agenthook is the agent hook: an interceptor that runs a
// sub-agent with read-only tools to decide whether an event of an agent's
// run may go on, the way Claude Code's "type": "agent" hooks do. The
// sub-agent gets the template (with $ARGUMENTS replaced by the event's
// JSON, as in package prompt), may read files (Read, Glob, Grep by
// default; never Bash, Write, Edit, Task or an MCP tool), takes at most
// MaxTurns steps within the timeout (default 60s), and ends with Claude
// Code's {"ok": true} or {"ok": false, "reason": "..."}, which becomes the
// decision as for a prompt hook.
//
// Its run is a loop.Engine run of its own, recorded on the loop's Emitter
// and History as a child run of the run being decided (its own session;
// the parent's agent, session and run ids in its events), so an auditor
// replays how it decided; hook.decided names the child run in its
// annotations. It cleans up after itself: Intercept returns once the child
// run has ended (run.completed, run.failed, or run.completed "interrupted"
// on a timeout) and leaves no goroutine behind.
//
//	hook, err := agenthook.New(agenthook.Config{
//		Prompt:  "Check that the file this edit touches has tests. $ARGUMENTS",
//		Model:   model,
//		Emitter: b, History: b, // the loop's *bus.Bus
//		Root:    "/srv/agent/work",
//	})
//	unregister, err := chain.Register(interceptors.Registration{
//		Plugin: "tested-edits", Stage: events.StageToolBefore, Tools: "Edit|Write", Timeout: 30 * time.Second,
//	}, hook)
package agenthook
