package policies

import (
	"context"
	"errors"
	"time"

	"github.com/hookbus/hookbus/policy"
)

// Check compiles p as Put does before storing it: every expression
// type-checks and its cost is within the limit. A policy that reads the
// session's history or counters compiles against a history that is never
// asked (the processes that apply it bring their own). The error wraps
// policy.ErrInvalid, naming the file:line:column.
func Check(p *policy.Policy) error {
	_, err := policy.Compile(p, policy.WithHistory(unasked{}))
	return err
}

// unasked is the History a policy is checked against: compiling asks it
// nothing.
type unasked struct{}

var errUnasked = errors.New("hookbus: a policy being checked reads no history")

func (unasked) SessionCount(context.Context, policy.Scope, string, time.Duration) (int64, error) {
	return 0, errUnasked
}

func (unasked) SessionSeen(context.Context, policy.Scope, string, string) (bool, error) {
	return false, errUnasked
}

func (unasked) Counter(context.Context, policy.CounterKey) (float64, error) { return 0, errUnasked }

func (unasked) Add(context.Context, policy.CounterKey, float64) error { return errUnasked }
