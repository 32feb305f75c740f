// Package interceptors is hookbus' decision model: the Interceptor that
// decides on an event, the Decision it answers, the Registration that says
// where and how it is called, and the ordered Chain that calls interceptors
// with timeouts, failure policies, trust tiers, matchers and an audit
// record. It imports no NATS package: the bus package calls and serves
// remote interceptors and registers them on a Chain like any other.
//
// To intercept a stage in-process, register a Func:
//
//	chain := interceptors.NewChain(interceptors.WithTrust(interceptors.NewGrants("rewriter")))
//	unregister, err := chain.Register(interceptors.Registration{
//		Plugin: "guard", Stage: events.StageToolBefore, Kinds: "shell", // every harness's shell tool (docs/ACTIONS.md)
//	}, interceptors.Func(func(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
//		return &interceptors.Decision{Kind: interceptors.Deny, Reason: "no shell"}, nil
//	}))
//
// and the loop, at each stage, asks MatchesCall first (free when nothing
// matches; kind is the kind of a tool stage's call, its action) and then Run:
//
//	if chain.MatchesCall(ev.Stage, ev.Subject, kind, ev.AgentID) > 0 {
//		out, err := chain.Run(ctx, ev)
//		// out.Decision, out.Data, out.Reason, out.Mock, out.Context;
//		// publish each out.Records[i].Audit() as hook.decided / hook.failed
//	}
//
// The chain decides who runs and when: an interceptor sees a request and
// answers a decision; it never calls the rest of the chain or wraps it, so
// one interceptor cannot skip, reorder or repeat another.
//
// Semantics (docs/PROTOCOL.md, "Interception"): mutating interceptors run
// one after another by Order, then registration order, each seeing the
// payload as the previous one left it; the first deny, mock, stop, ask or
// continue ends them. Validating interceptors (allow or deny only) then run
// in parallel; any deny wins. Each call has its own timeout (default 5s, at
// most 30s unless an in-process registration sets Uncapped), enforced even
// when the interceptor ignores its ctx: each call runs on a worker goroutine
// (parked between calls, not started per call), abandoned at the timeout,
// while the chain waits; a mutating ContextBound interceptor, which returns
// once its ctx ends, as remote.Client does, and a BoundFunc, are called on
// the chain's goroutine instead. A timeout, error, panic, bad reply or (for
// remote interceptors) no responders is a failure: policy ignore records it
// and goes on, policy fail denies the event (or stops the run on
// step.started, tool.after and stop, which accept no deny). context.assembled and model.responded accept only built-in
// interceptors and plugins the chain's Trust grants privileged_hooks.
//
// A decision's JSON form is the wire reply of remote interceptors; see
// Decision and ParseDecision. Which decisions a stage accepts is StageKinds.
//
// The calls of one run share a Memo (Request.Memo), where a transport keeps
// what it derived from the run's event for the next call: remote.Client
// keeps the encoded request, so a run's remote calls encode it once.
//
// Registrations that hold for one run only (an agent's own hooks) go on a
// Child chain, which runs its parent's registrations with its own.
//
// Package interceptorstest is the conformance suite every implementation of
// interception (in-process, over NATS) passes.
package interceptors
