// Package policies holds a bus's policies (package policy: CEL rules over
// tool calls and the other stages) where every worker and bridge reads
// them: in the trust bucket (bus.Names.Trust), which only the admin
// writes (deploy/nats), one entry "policy.<name>" per policy, beside the
// grants, the kill switch and the budget limits. docs/PROTOCOL.md,
// "Policies", has the entries' form.
//
// # Start
//
// An operator stores a policy file's policies with a Store (observer
// policy apply does); each must compile, and the record names who
// applied it:
//
//	ps, err := policy.Parse("deny-rm.yaml", src)
//	for _, p := range ps {
//		rec, changed, err := policies.New(b).Put(ctx, p, events.Actor{Channel: events.ChannelCLI})
//	}
//
// Where decisions are made (a worker's chain, the coding-agent bridge),
// Sync registers them on the chain, evaluated in process, and follows
// their changes live:
//
//	s, err := policies.Sync(ctx, b, chain, history.New(b))
//	defer s.Stop()
package policies
