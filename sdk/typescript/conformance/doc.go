// Package conformance holds the TypeScript SDK (sdk/typescript) to the
// interception conformance suite (interceptors/interceptorstest) and to
// remote.Serve's wire behaviour: its tests start conformance/server.ts (built
// into build/conformance) as a process that serves plugins with the SDK,
// and call them from Go over NATS; and they run the README's policy,
// examples/deny-rm-rf.ts, against a loop. They skip, saying so, when node
// or the built SDK is missing (make sdk-ts builds it).
package conformance
