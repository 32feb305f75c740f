// Package interceptorstest is the conformance suite of interception: the
// seed's hook tests, written once, that every way of running an interceptor
// passes. In-process interceptors run it in package interceptors' own tests;
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
// Features names what legitimately differs between implementations.
package interceptorstest
