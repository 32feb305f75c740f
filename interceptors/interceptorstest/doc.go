// Package interceptorstest is the conformance suite of interception: what
// an interceptor may do at each stage, and how the chain calls it, written
// once, that every way of running an interceptor passes. In-process interceptors run it in package interceptors' own tests;
// the NATS implementation in bus runs it by serving each interceptor as a
// remote service and registering a remote client in its place:
//
//	func TestRemoteConformance(t *testing.T) {
//		interceptorstest.Run(t, func(t *testing.T, reg interceptors.Registration, ic interceptors.Interceptor) interceptors.Interceptor {
//			// serve ic as reg.Plugin on reg.Stage; t.Cleanup stops it
//			return client // an Interceptor that calls the service
//		}, interceptorstest.Features{PanicKind: events.FailError})
//	}
//
// What the suite asks of an implementation beyond the chain's own rules:
// the served interceptor gets a Request with the Stage, the Event (its Data
// as the chain passed it) and a Deadline matching its ctx, no later than the
// registration's timeout; an error returned by the interceptor, or the value
// of a panic, reaches the chain with its text; decisions keep every field
// (data, patch, reason, context, warnings, annotations). Cases run one after
// another and name their plugins uniquely, so that services of different
// cases never share a subject.
//
// Features names what legitimately differs between implementations: the
// failure kind of a panic; what a hook protocol other than hookbus' own
// cannot carry (the stages it intercepts, mock, annotations, replacing an
// intake payload, patch replies, decisions its stage refuses), which the
// command and http hooks, speaking Claude Code's protocol, declare; and the
// answers an implementation cannot give (Features.Lacks: a prompt or agent
// hook answers allow or deny with a reason, nothing else). A case that needs
// what an implementation lacks is skipped, saying why. Every case intercepts
// some of intake, tool.before, tool.after and stop; Features.Stages names
// the others.
package interceptorstest
