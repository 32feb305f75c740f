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
	inputs    *Inputs
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

// WithInputs has the policy's Interceptor share the input it reads from
// an event with the other policies compiled with the same Inputs: the
// call is read from the payload once for all of them.
func WithInputs(s *Inputs) Option {
	return func(o *options) error {
		if s == nil {
			return fmt.Errorf("%w: WithInputs(nil)", ErrInvalidOption)
		}
		o.inputs = s
		return nil
	}
}
