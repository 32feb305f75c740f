package policy

import "fmt"

// DefaultCostLimit bounds each expression: its estimated cost at Compile
// and its actual cost at each evaluation (CEL's cost units, as
// Kubernetes' admission policies count them).
const DefaultCostLimit = 1_000_000

// Option configures Compile.
type Option func(*options) error

type options struct {
	history   History
	costLimit uint64
}

// WithHistory gives the policy what the record holds: the functions
// session.count and session.seen and the counters read it. A policy that
// uses them is refused without it (ErrNoHistory).
func WithHistory(h History) Option {
	return func(o *options) error {
		if h == nil {
			return fmt.Errorf("%w: WithHistory(nil)", ErrInvalidOption)
		}
		o.history = h
		return nil
	}
}

// WithCostLimit sets the cost limit of each expression (default
// DefaultCostLimit): its estimated cost at Compile and its cost at each
// evaluation.
func WithCostLimit(n uint64) Option {
	return func(o *options) error {
		if n == 0 {
			return fmt.Errorf("%w: WithCostLimit(0)", ErrInvalidOption)
		}
		o.costLimit = n
		return nil
	}
}
