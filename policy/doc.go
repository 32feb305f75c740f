// Package policy holds policies as data: YAML files shaped after
// Kubernetes' admission policies whose rules are CEL expressions, checked
// when they are applied and evaluated in process where a decision is made.
//
// A policy names what it matches (stages, agents, harnesses, action kinds,
// tools), conditions, lazily evaluated variables, fleet-wide counters,
// validations (a false expression denies, asks a person or warns) and
// mutations (an RFC 6902 patch of the payload). Its mode is enforce, warn
// (recorded, allowed, the message as a warning) or audit (recorded as a
// shadow decision, never applied), and a rollout percentage enforces it in
// a stable share of sessions.
//
// Start with Parse and Compile, then put the policy in a chain:
//
//	ps, err := policy.Parse("no-rm.yaml", src) // errors say "no-rm.yaml:7:14: ..."
//	c, err := policy.Compile(ps[0])             // type-checked, cost-bounded
//	for _, reg := range c.Registrations() {
//		err = chain.Register(reg, c.Interceptor())
//	}
//
// (policies on one chain can share their reading of each call:
// WithInputs), or evaluate one event directly (Evaluate, InputFrom). Rules over what
// came before (session.count, session.seen, counters) read a History:
// Memory keeps one in memory; bus/history keeps it over the bus.
//
// docs/POLICIES.md is the reference of the file format, the variables and
// functions, with the rules people write first.
package policy
