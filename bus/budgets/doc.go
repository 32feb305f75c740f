// Package budgets holds the shared budgets of a hookbus bus: what an agent,
// or each of its sessions, may spend per period (tokens, dollars), across
// every worker, in the KV bucket the bus provisions (hookbus_budgets).
//
// # Start
//
// Put the budgets on a provisioned bus (New does no I/O) and give them to
// the loop engine, which reserves each model call and charges it after:
//
//	sb := budgets.New(b)
//	err := sb.Check(ctx) // the bucket is there (a bus provisioned by an older hookbus has none)
//	eng, err := loop.New(loop.Config{SharedBudget: sb, ...})
//
// An operator sets a budget with SetLimit (observer budgets set does) and
// reads budgets and their use with List. Every change of a use is a
// compare-and-set on the revision read, retried on conflict, so concurrent
// workers never lose each other's charges; SetLimit and RemoveLimit record
// who made the change, as the server authenticated the connection. See
// docs/PROTOCOL.md, "Shared budgets".
package budgets
