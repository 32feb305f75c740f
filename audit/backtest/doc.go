// Package backtest replays recorded traffic through a candidate
// interceptor and compares its decisions with those recorded (observer
// shadow): a shadow backtest. Nothing is written and no run is touched.
//
// For each recorded event of the candidate's stage it rebuilds the input
// the candidate saw (or would have seen at the end of the chain) from the
// event as stored, the interceptors' records on it (hook.decided,
// hook.failed) and, where a later interceptor changed it, the payload
// before the chain (audit.Before); it asks the candidate, and lists every
// event where the candidate decides differently from what was recorded.
// docs/PROTOCOL.md ("Shadow backtests") has the rules.
//
// Run backtests a remote interceptor over NATS:
//
//	rep, err := backtest.Run(ctx, b, backtest.Config{
//		Registration: interceptors.Registration{Plugin: "guard-v2", Stage: events.StageToolBefore, Timeout: time.Second},
//		Filter:       bus.Filter{Agent: "support", Since: time.Now().Add(-7 * 24 * time.Hour)},
//	})
//	fmt.Println(rep.Scanned, rep.Sent, rep.Differ)
//
// A Backtest is the same fold fed by hand, with any candidate (an
// in-process chain, in tests): Stages names what to feed it.
package backtest
