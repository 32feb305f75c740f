package policy

import (
	"context"
	"errors"
	"fmt"

	"github.com/hookbus/hookbus/interceptors"
)

// PluginPrefix starts the plugin name of a policy's registrations.
const PluginPrefix = "policy-"

// Registrations returns the policy's registrations, one per matched
// stage: plugin "policy-" and its name, its order, its failure policy as
// the registration's policy, the agents, kinds and tools it matches, mode
// shadow for an audit policy (called after the chain, never applied),
// and built in: policies come from the bus' trust bucket, which only
// administrators write.
func (c *Compiled) Registrations() []interceptors.Registration {
	s := c.p.Spec
	out := make([]interceptors.Registration, 0, len(c.stages))
	for _, st := range c.stages {
		r := interceptors.Registration{
			Plugin:  PluginPrefix + c.p.Name,
			Stage:   st,
			Order:   s.Order,
			Policy:  s.FailurePolicy,
			Agents:  registrationValue(s.Match.Agents),
			Builtin: true,
		}
		if interceptors.ToolMatched(st) {
			r.Tools = registrationValue(s.Match.Tools)
		}
		if st == "tool.before" || st == "tool.after" {
			r.Kinds = registrationValue(s.Match.Kinds)
		}
		if s.Mode == ModeAudit {
			r.Mode = interceptors.ModeShadow
		}
		out = append(out, r)
	}
	return out
}

// Interceptor returns what the chain calls for the policy's
// registrations: it evaluates in process, on the chain's goroutine, and
// returns once ctx is done (interceptors.BoundFunc). It records no
// Steps (the hit says which rule decided and what it read). The caller's
// identity is not known to the chain; a harness that knows it evaluates
// with Evaluate and an Input of its own.
//
// An evaluation error is returned to the chain, which applies the
// registration's policy (the policy's failurePolicy) and records it;
// where the policy is not enforced for the session (warn, or outside the
// rollout) the call goes on with the error as a warning.
func (c *Compiled) Interceptor() interceptors.Interceptor {
	return interceptors.BoundFunc(func(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
		var (
			in  *Input
			err error
		)
		if c.opts.inputs != nil {
			in, err = c.opts.inputs.inputFor(req.Event)
		} else {
			in, err = InputFrom(req.Event, "")
		}
		if err != nil {
			return nil, err
		}
		res, err := c.evaluate(ctx, in, 0)
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
				err = fmt.Errorf("%w (%w)", err, ctxErr)
			}
			if mode, enforced := c.modeFor(req.Event); !enforced && mode != ModeAudit {
				return &interceptors.Decision{Kind: interceptors.Allow, Warnings: []string{err.Error()}}, nil
			}
			return nil, err
		}
		return res.Decision, nil
	})
}
