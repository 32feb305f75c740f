package policy

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// Result is what a policy decided on one input.
type Result struct {
	// Decision is what the chain applies: nil when the policy did not
	// apply (the event did not match, or a match condition was false);
	// otherwise it carries Policy (the Hit). An allow with a hit says the
	// policy applied and every rule held.
	Decision *interceptors.Decision
	// Hit is what the policy decided and why; nil when it did not apply.
	Hit *events.PolicyHit
	// Steps are the expressions evaluated, in order.
	Steps []Step
}

// Step is one expression evaluated, for explain.
type Step struct {
	// Rule is the rule's (or condition's, variable's) name.
	Rule string
	// Expression is its CEL text.
	Expression string
	// Outcome is what it gave: "true", "false", a message, "error: ...".
	Outcome string
	// Values are the fields and variables it read, rendered short; set
	// on the rule that decided (or the last one evaluated).
	Values map[string]string
}

// Outcomes of a Step.
const (
	OutcomeTrue  = "true"
	OutcomeFalse = "false"
)

// Hit actions beyond the validation actions.
const (
	HitMutate = "mutate"
	HitAllow  = "allow"
)

// Evaluate decides on in: whether the policy matches it (stages, agents,
// harnesses, kinds, tools, then the match conditions), its validations in
// order (the first failing deny or ask decides; failing warns add
// warnings), then its mutations, as the policy's mode and rollout say. The
// counters are added to when the call is let through. An expression that
// fails at run time (or a history that does not answer, or the cost limit,
// or ctx ending) returns the Result so far and an error wrapping
// ErrEvaluation; the chain applies the policy's failurePolicy.
func (c *Compiled) Evaluate(ctx context.Context, in *Input) (*Result, error) {
	return c.evaluate(ctx, in, evalSteps)
}

// How evaluate runs.
type evalMode int

const (
	evalSteps     evalMode = 1 << iota // record the Steps (Evaluate)
	evalReference                      // rule by rule, costs tracked: what the fast paths must agree with
)

// evaluate is Evaluate; without steps (what the chain calls) it records
// no Steps, only the hit.
func (c *Compiled) evaluate(ctx context.Context, in *Input, how evalMode) (*Result, error) {
	if in == nil || in.Event == nil {
		return nil, fmt.Errorf("%w: no event", ErrEvaluation)
	}
	res := &Result{}
	if !c.matches(in) {
		return res, nil
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("%w: policy %s: %w", ErrEvaluation, c.p.Name, err)
	}
	a := newActivation(ctx, c, in)
	a.steps = how&evalSteps != 0
	if how&evalReference != 0 {
		a.fast, a.reference = false, true
	}
	for _, e := range c.conds {
		ok, err := c.evalBool(a, e, res)
		if err != nil {
			return res, err
		}
		if !ok {
			return res, nil
		}
	}
	mode, enforced := c.modeFor(in.Event)
	hit := &events.PolicyHit{Name: c.p.Name, Version: c.p.Version, Mode: string(mode), Action: HitAllow, Enforced: enforced}
	var (
		warnings []string
		failed   *validation
		message  string
		last     *expr
	)
	rest := c.validations
	if how&evalReference == 0 && c.allHold(a, res) {
		last, rest = c.validations[len(c.validations)-1].expr, nil
	}
	for _, v := range rest {
		last = v.expr
		ok, err := c.evalBool(a, v.expr, res)
		if err != nil {
			c.explain(a, v.expr, res, hit)
			return res, err
		}
		if ok {
			continue
		}
		msg := c.message(a, v)
		if a.steps {
			res.Steps[len(res.Steps)-1].Outcome = OutcomeFalse + ": " + msg
		}
		if v.v.Action == ActionWarn {
			warnings = append(warnings, msg)
			if failed == nil || failed.v.Action == ActionWarn {
				failed, message = v, msg
			}
			continue
		}
		failed, message = v, msg
		break
	}
	var patch []interceptors.PatchOp
	if failed == nil || failed.v.Action == ActionWarn {
		for _, m := range c.mutations {
			last = m
			ops, err := c.evalPatch(a, m, res)
			if err != nil {
				c.explain(a, m, res, hit)
				return res, err
			}
			if len(ops) > 0 && failed == nil {
				hit.Rule, hit.Action = m.rule, HitMutate
				hit.Expression, hit.Values = m.text, c.values(a, m)
			}
			patch = append(patch, ops...)
		}
	}
	if failed != nil {
		hit.Rule, hit.Action, hit.Message = failed.rule, string(failed.v.Action), message
		c.explain(a, failed.expr, res, hit)
	} else if hit.Action == HitAllow && last != nil {
		c.explain(a, last, res, hit)
	}
	res.Hit = hit
	res.Decision = c.decide(in.Event.Stage, mode, enforced, hit, failed, warnings, patch)
	// The counters count the calls the rules let through (in warn and
	// audit, those they would have): the same count whatever the mode.
	if len(c.counters) > 0 && (failed == nil || failed.v.Action == ActionWarn) {
		if err := c.add(a); err != nil {
			return res, err
		}
	}
	return res, nil
}

// allHold runs every validation at once (the fast path); when all hold
// it records their steps and returns true. Otherwise it records nothing:
// the rules run one by one to say which failed.
func (c *Compiled) allHold(a *activation, res *Result) bool {
	if c.all == nil {
		return false
	}
	all := c.all
	if a.fast {
		all = c.allFast
	}
	if v, _, err := all.ContextEval(a.ctx, a); err != nil || v != types.True {
		return false
	}
	if !a.steps {
		return true
	}
	if res.Steps == nil {
		res.Steps = make([]Step, 0, len(c.conds)+len(c.validations)+len(c.mutations))
	}
	for _, v := range c.validations {
		res.Steps = append(res.Steps, Step{Rule: v.rule, Expression: v.text, Outcome: OutcomeTrue})
	}
	return true
}

// decide turns what the rules said into the chain's decision, as the
// mode says.
func (c *Compiled) decide(stage events.Stage, mode Mode, enforced bool, hit *events.PolicyHit, failed *validation,
	warnings []string, patch []interceptors.PatchOp) *interceptors.Decision {
	d := &interceptors.Decision{Kind: interceptors.Allow, Policy: hit}
	if failed != nil && failed.v.Reason != "" {
		d.Annotations = map[string]string{"reason": failed.v.Reason}
	}
	reason := ""
	if failed != nil {
		reason = fmt.Sprintf("%s (policy %s)", hit.Message, c.p.Name)
	}
	switch {
	case mode == ModeWarn:
		if failed != nil {
			hit.Action = string(ActionWarn)
			d.Warnings = append(d.Warnings, reason)
		}
		return d
	case !enforced && c.p.Spec.Mode == ModeEnforce: // outside the rollout: recorded only
		return d
	}
	// enforce, or audit (a shadow registration: decided, never applied).
	if failed != nil && failed.v.Action != ActionWarn {
		d.Kind, d.Reason = interceptors.Deny, reason
		if failed.v.Action == ActionAsk {
			d.Kind = interceptors.Ask
		}
		if !stage.Accepts().Has(events.DecisionNamed(string(d.Kind))) {
			d.Kind = interceptors.Deny
			if !stage.Accepts().Has(events.DecisionDeny) {
				d.Kind = interceptors.Stop
			}
		}
		return d
	}
	for _, w := range warnings {
		d.Warnings = append(d.Warnings, fmt.Sprintf("%s (policy %s)", w, c.p.Name))
	}
	if len(patch) > 0 {
		d.Kind, d.Patch = interceptors.Modify, patch
	}
	return d
}

// matches reports whether in is one the policy looks at.
func (c *Compiled) matches(in *Input) bool {
	ev := in.Event
	if !slices.Contains(c.stages, ev.Stage) || !c.agents.match(ev.AgentID) || !c.harnesses.match(in.Harness) {
		return false
	}
	if len(c.kinds) > 0 {
		if in.Call == nil || in.Call.Action == nil || !c.kinds.match(string(in.Call.Action.Kind)) {
			return false
		}
	}
	if len(c.tools) > 0 {
		name := ev.Subject
		if in.Call != nil {
			name = in.Call.Name
		}
		if !c.tools.match(name) {
			return false
		}
	}
	return true
}

// modeFor is how the policy applies to ev's session: its mode, and
// whether its decisions are applied (enforce within the rollout).
func (c *Compiled) modeFor(ev *events.Event) (Mode, bool) {
	s := c.p.Spec
	switch s.Mode {
	case ModeAudit, ModeWarn:
		return s.Mode, false
	}
	if s.Rollout >= 100 || InRollout(c.p.Name, ev.SessionID, s.Rollout) {
		return ModeEnforce, true
	}
	return ModeAudit, false
}

// InRollout reports whether session falls within the first percent of
// sessions for the policy named name: stable for a session, independent
// between policies.
func InRollout(name, session string, percent int) bool {
	if percent >= 100 {
		return true
	}
	if percent <= 0 {
		return false
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write([]byte(session))
	return h.Sum64()%100 < uint64(percent)
}

// evalBool runs a bool expression and records its step.
func (c *Compiled) evalBool(a *activation, e *expr, res *Result) (bool, error) {
	v, err := e.run(a)
	if err == nil {
		if b, ok := v.(types.Bool); ok {
			a.step(res, Step{Rule: e.rule, Expression: e.text, Outcome: outcome(bool(b))})
			return bool(b), nil
		}
		err = fmt.Errorf("the expression gave %s, not a bool", v.Type().TypeName())
	}
	return false, c.failed(a, e, res, err)
}

func outcome(b bool) string {
	if b {
		return OutcomeTrue
	}
	return OutcomeFalse
}

// failed records e's failure and returns it as an ErrEvaluation.
func (c *Compiled) failed(a *activation, e *expr, res *Result, err error) error {
	switch {
	case a.histErr != nil:
		err = fmt.Errorf("history: %w", a.histErr)
	case isCostLimit(err):
		err = fmt.Errorf("%w: %v", ErrCostLimit, err)
	}
	a.step(res, Step{Rule: e.rule, Expression: e.text, Outcome: "error: " + err.Error()})
	return fmt.Errorf("%w: policy %s: %s: %w", ErrEvaluation, c.p.Name, e.rule, err)
}

func isCostLimit(err error) bool {
	var ec interpreter.EvalCancelledError
	return errors.As(err, &ec) && ec.Cause == interpreter.CostLimitExceeded
}

// message is what a failed validation says: its messageExpression's
// value, else its message, else its name and expression.
func (c *Compiled) message(a *activation, v *validation) string {
	if v.message != nil {
		if out, err := v.message.run(a); err == nil {
			if s, ok := out.(types.String); ok && s != "" {
				return string(s)
			}
		}
	}
	return cmp.Or(v.v.Message, fmt.Sprintf("rule %s failed: %s", v.rule, v.text))
}

// evalPatch runs a mutation and reads its JSON Patch.
func (c *Compiled) evalPatch(a *activation, e *expr, res *Result) ([]interceptors.PatchOp, error) {
	v, err := e.run(a)
	if err != nil {
		return nil, c.failed(a, e, res, err)
	}
	b, err := toJSON(v)
	if err != nil {
		return nil, c.failed(a, e, res, fmt.Errorf("the patch is not JSON: %v", err))
	}
	var ops []interceptors.PatchOp
	if err := json.Unmarshal(b, &ops); err != nil {
		return nil, c.failed(a, e, res, fmt.Errorf("the patch is not a list of operations {op, path, value}: %v", err))
	}
	if err := (&interceptors.Decision{Kind: interceptors.Modify, Patch: ops}).Validate(events.StageToolBefore); err != nil && len(ops) > 0 {
		return nil, c.failed(a, e, res, fmt.Errorf("the patch is malformed: %v", strings.TrimPrefix(err.Error(), interceptors.ErrBadReply.Error()+": ")))
	}
	if a.steps {
		a.step(res, Step{Rule: e.rule, Expression: e.text, Outcome: fmt.Sprintf("patch: %d operations", len(ops))})
	}
	return ops, nil
}

// add adds each counter's value to its window.
func (c *Compiled) add(a *activation) error {
	for i, cn := range c.counters {
		k, err := a.counterKey(i)
		if err != nil {
			return fmt.Errorf("%w: policy %s: counter %s: key: %w", ErrEvaluation, c.p.Name, cn.c.Name, err)
		}
		v, err := cn.value.run(a)
		if err != nil {
			return fmt.Errorf("%w: policy %s: counter %s: value: %w", ErrEvaluation, c.p.Name, cn.c.Name, err)
		}
		f, ok := number(v)
		if !ok {
			return fmt.Errorf("%w: policy %s: counter %s: value %s is not a number", ErrEvaluation, c.p.Name, cn.c.Name, v.Type().TypeName())
		}
		if err := c.opts.history.Add(a.ctx, k, f); err != nil {
			return fmt.Errorf("%w: policy %s: counter %s: history: %w", ErrEvaluation, c.p.Name, cn.c.Name, err)
		}
	}
	return nil
}

func number(v ref.Val) (float64, bool) {
	switch n := v.(type) {
	case types.Int:
		return float64(n), true
	case types.Uint:
		return float64(n), true
	case types.Double:
		return float64(n), true
	}
	return 0, false
}

func errNotString(e *expr, v ref.Val) error {
	return fmt.Errorf("%s gave %s, not a string", e.text, v.Type().TypeName())
}

// explain sets the values e read on its step and the hit.
func (c *Compiled) explain(a *activation, e *expr, res *Result, hit *events.PolicyHit) {
	vals := c.values(a, e)
	for i := len(res.Steps) - 1; i >= 0; i-- {
		if res.Steps[i].Rule == e.rule && res.Steps[i].Expression == e.text {
			res.Steps[i].Values = vals
			break
		}
	}
	hit.Expression, hit.Values = e.text, vals
}

// values renders what e read.
func (c *Compiled) values(a *activation, e *expr) map[string]string {
	if len(e.reads) == 0 {
		return nil
	}
	out := make(map[string]string, len(e.reads))
	for _, r := range e.reads {
		var (
			v   ref.Val
			err error
		)
		if r.root != "" && !a.reference {
			x, _ := a.ResolveName(r.root)
			v = x.(ref.Val)
			if r.field >= 0 {
				v = v.(*object).vals[r.field]
			}
			if e, ok := v.(*types.Err); ok {
				err = e
			}
		} else {
			v, _, err = r.prg.ContextEval(a.ctx, a)
		}
		if err != nil {
			out[r.name] = "<" + short(err.Error(), 60) + ">"
			continue
		}
		out[r.name] = render(v)
	}
	return out
}
