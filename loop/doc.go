// Package loop is hookbus' agent loop engine: it runs an agent (a Model and
// its Tools) step by step and fires every stage of the hook bus, publishing
// each as a CloudEvent and, where interceptors are registered, asking them
// first.
//
// A run:
//
//	intake → run.started → [step.started → context.assembled → model.responded
//	  → (tool.before → tool.after | tool.failed)* → step.completed]* → stop → run.completed
//
// The engine keeps no database: a session is rebuilt from its events in the
// stream (History), so a second run with the same session id continues the
// conversation, and a run interrupted by a crash resumes from its events
// without re-running a tool whose tool.after is recorded.
//
// Start with New, giving it an Emitter and a History (a *bus.Bus provides
// both), a Model (package scripted for deterministic demos and tests) and
// Tools (package tools):
//
//	eng, err := loop.New(loop.Config{Emitter: pub, History: b, Model: model, Tools: tools.Builtin(root)})
//	res, err := eng.Run(ctx, &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "what is 6*7?"})
//
// Worker runs the engine over the run queue (loop serve).
//
// A run that waits for a human is answered with approval.Answer (package
// record/approval), by whoever answers (observer approve, the web page, a
// program), which records the answer in the run's record, first answer
// wins. Workers resume the run from the recorded answer (Resumer).
package loop
