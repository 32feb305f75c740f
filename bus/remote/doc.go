// Package remote is interception over NATS: serving an interceptor as a
// NATS service (Serve), calling one from a loop's chain (Client, Register),
// and what decides which remote interceptors a loop calls: the registry,
// trust grants for the privileged stages, the kill switch, and HookSync,
// which keeps a chain in step with all three. It also holds the decision
// cache of prompt hooks and the sink that records shadow calls.
//
// # Serve an interceptor (a plugin)
//
// Any process with a NATS connection serves an interceptors.Interceptor on
// the stages it names; instances of one plugin share the requests:
//
//	nc, err := bus.Connect("nats://127.0.0.1:4222")
//	svc, err := remote.Serve(ctx, nc, remote.ServeConfig{Plugin: "guard", Stages: []events.Stage{events.StageToolBefore}},
//		interceptors.Func(func(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
//			return nil, nil // allow
//		}))
//	defer svc.Stop()
//
// Serve makes a nats.go micro service named after the plugin, an endpoint
// per stage on <prefix>.hook.<stage>.<plugin>, queue group = plugin; each
// request's event is decoded (claim-checked data fetched) and the
// interceptor runs within the request's deadline. docs/PROTOCOL.md,
// "Interception", has the wire details: a service in another language
// speaks the same protocol.
//
// # Call interceptors (a loop)
//
// Register the plugin on a chain, or let the registry decide:
//
//	reg := remote.NewRegistry(b)             // KV hookbus_hooks and hookbus_trust; no I/O
//	err := reg.Put(ctx, interceptors.Registration{Plugin: "guard", Stage: events.StageToolBefore})
//
//	trust, err := remote.WatchTrust(ctx, b)
//	chain := interceptors.NewChain(interceptors.WithTrust(trust))
//	hs, err := remote.SyncHooks(ctx, b, chain, trust) // hs.Synced(ctx) waits for changes to apply
//
// A Client sends the stage's event with its deadline and reads the
// decision; a failure is an *interceptors.CallError (timeout,
// no_responders at once, bad_reply, error). Registry.Disable is the kill
// switch: it turns a plugin off in every loop that follows the registry.
//
// This package imports bus (the connection, the names of the prefix, the
// claim check) and neither bus/runs nor bus/budgets: a plugin that serves
// an interceptor links no run-queue code.
package remote
