// Package policytest tests policies against history (observer policy
// test): it replays the recorded calls of every harness (hookbus' own
// runs and the coding agents' bridged sessions) through compiled policies
// as they were, and says what would change: the calls each policy would
// newly deny, newly allow, rewrite or send to a person, per agent and
// harness, with their runs and calls.
//
// Each policy is tested as if enforced in every session (whatever its mode
// and rollout say; each flip says whether the policy as written would
// enforce it), on the events its match selects, in the chain a worker
// builds for it (package interceptors). What it is compared with is what
// the record holds: the policy's own recorded decision when it was
// enforced already, else the chain's outcome. Its input is the event as the
// policy saw it, rebuilt by package audit/backtest (the fold observer
// shadow uses), and its session rules read a policy.Memory fed with the
// record in order: each call sees the calls of its session before it. Its
// counters start empty and run on the recorded time of each call.
//
//	ps, err := policy.Parse("no-rm.yaml", src)
//	t, err := policytest.New(ps)
//	for each event e of t.Stages(), in stream order: t.Add(ctx, e)
//	rep := t.Report()
//
// Run does the same over a bus (bus.Replay).
package policytest
