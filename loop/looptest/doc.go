// Package looptest holds what tests of package loop need without a NATS
// server: Journal, an in-memory record of sessions that is both a
// loop.Emitter and a loop.History, with the fence and de-duplication
// semantics the engine relies on.
//
//	j := looptest.New()
//	eng, err := loop.New(loop.Config{Emitter: j, History: j, Model: scripted.New(nil), Tools: tools.Builtin("")})
//	res, err := eng.Run(ctx, &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "hi"})
//	for _, e := range j.Events() { ... }
//
// Tests about the transport (fencing against a real server, resuming after
// a server restart, publishing) use a real embedded nats-server instead
// (bus/bustest).
package looptest
