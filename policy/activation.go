package policy

import (
	"context"
	"encoding/json"
	"time"

	"cel.dev/cel-go/common/functions"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/interpreter"

	"github.com/hookbus/hookbus/events"
)

// activation is what one evaluation's expressions read: each value is
// built when first read and kept for the rest of the evaluation
// (variables and counters included: a variable is evaluated at most once).
type activation struct {
	c     *Compiled
	ctx   context.Context
	in    *Input
	scope Scope

	event, call, action, payload ref.Val
	strs                         [5]ref.Val // agent, session, run, harness, identity
	vars                         []ref.Val
	counters                     []ref.Val
	histErr                      error // the first error of the history
	// fast: the inputs are within the sizes the cost estimates assumed,
	// so expressions run without cost tracking (inBounds).
	fast bool
	// steps: the evaluation records its Steps (Evaluate; the chain's
	// calls do not).
	steps bool
	// reference: every expression and every value explain renders is
	// run as a program, costs tracked (what the fast paths agree with).
	reference bool
}

// step records s when the evaluation records steps.
func (a *activation) step(res *Result, s Step) {
	if a.steps {
		res.Steps = append(res.Steps, s)
	}
}

func newActivation(ctx context.Context, c *Compiled, in *Input) *activation {
	a := &activation{c: c, ctx: ctx, in: in, fast: inBounds(in)}
	if ev := in.Event; ev != nil {
		a.scope = Scope{Agent: ev.AgentID, Session: ev.SessionID, Event: ev}
	}
	if len(c.vars) > 0 {
		a.vars = make([]ref.Val, len(c.vars))
	}
	if len(c.counters) > 0 {
		a.counters = make([]ref.Val, len(c.counters))
	}
	return a
}

// Parent implements interpreter.Activation: there is none.
func (a *activation) Parent() interpreter.Activation { return nil }

// ResolveName implements interpreter.Activation.
func (a *activation) ResolveName(name string) (any, bool) {
	ev := a.in.Event
	switch name {
	case varAgent:
		return a.str(0, ev.AgentID), true
	case varSession:
		return a.str(1, ev.SessionID), true
	case varRun:
		return a.str(2, ev.RunID), true
	case varHarness:
		return a.str(3, a.in.Harness), true
	case varIdentity:
		return a.str(4, a.in.Identity), true
	case varEvent:
		if a.event == nil {
			a.event = newObject(eventDef, types.String(ev.Stage), types.String(ev.ID), types.String(ev.Source),
				a.str(0, ev.AgentID), a.str(1, ev.SessionID), a.str(2, ev.RunID), types.Int(ev.Step), types.String(ev.Subject), types.Timestamp{Time: ev.Time})
		}
		return a.event, true
	case varCall:
		if a.call == nil {
			var id, name string
			var args map[string]any
			if c := a.in.Call; c != nil {
				id, name = c.ID, c.Name
				_ = json.Unmarshal(c.Arguments, &args) // not an object: no arguments
			}
			if args == nil {
				args = map[string]any{}
			}
			a.call = newObject(callDef, types.String(id), types.String(name), a.c.adapter.NativeToValue(args))
		}
		return a.call, true
	case varAction:
		if a.action == nil {
			var x events.Action
			if c := a.in.Call; c != nil && c.Action != nil {
				x = *c.Action
			}
			a.action = newObject(actionDef, types.String(x.Kind), types.String(x.Command),
				types.NewStringList(a.c.adapter, x.Paths), types.String(x.URL), types.String(x.Query),
				types.String(x.Server), types.String(x.MCPTool))
		}
		return a.action, true
	case varPayload:
		if a.payload == nil {
			m := map[string]any{}
			_ = json.Unmarshal(ev.Data, &m) // not an object: empty
			if m == nil {
				m = map[string]any{}
			}
			a.payload = a.c.adapter.NativeToValue(m)
		}
		return a.payload, true
	}
	if i, ok := a.c.varIndex[name]; ok {
		if a.vars[i] == nil {
			a.vars[i] = a.eval(a.c.vars[i])
			if a.fast && !valueInBounds(a.vars[i]) {
				a.fast = false // what reads it may cost more than estimated
			}
		}
		return a.vars[i], true
	}
	if i, ok := a.c.counterIdx[name]; ok {
		if a.counters[i] == nil {
			a.counters[i] = a.counter(i)
		}
		return a.counters[i], true
	}
	return nil, false
}

// str is a string variable, boxed once per evaluation.
func (a *activation) str(i int, s string) ref.Val {
	if a.strs[i] == nil {
		a.strs[i] = types.String(s)
	}
	return a.strs[i]
}

// eval runs e in this activation; an error is a CEL error value.
func (a *activation) eval(e *expr) ref.Val {
	v, err := e.run(a)
	if err != nil {
		return types.WrapErr(err)
	}
	return v
}

// counterKey evaluates counter i's key.
func (a *activation) counterKey(i int) (CounterKey, error) {
	cn := a.c.counters[i]
	v, err := cn.key.run(a)
	if err != nil {
		return CounterKey{}, err
	}
	key, ok := v.(types.String)
	if !ok {
		return CounterKey{}, errNotString(cn.key, v)
	}
	return CounterKey{Policy: a.c.p.Name, Counter: cn.c.Name, Key: string(key), Window: cn.c.Window}, nil
}

func (a *activation) counter(i int) ref.Val {
	k, err := a.counterKey(i)
	if err != nil {
		return types.WrapErr(err)
	}
	sum, err := a.c.opts.history.Counter(a.ctx, k)
	if err != nil {
		return a.historyErr(err)
	}
	return types.Double(sum)
}

// historyErr notes the history's first error and returns err as a CEL
// error value.
func (a *activation) historyErr(err error) ref.Val {
	if a.histErr == nil {
		a.histErr = err
	}
	return types.WrapErr(err)
}

// ResolveFunction implements interpreter.FunctionActivation: the
// session's history functions, answered for this evaluation's scope.
func (a *activation) ResolveFunction(name string) (functions.LateBoundOp, bool) {
	switch name {
	case fnCount:
		return a.sessionCount, true
	case fnSeen:
		return a.sessionSeen, true
	}
	return nil, false
}

func (a *activation) sessionScope(receiver ref.Val) Scope {
	s := a.scope
	if id, ok := receiver.(types.String); ok {
		s.Session = string(id)
	}
	return s
}

func (a *activation) sessionCount(_ string, args ...ref.Val) ref.Val {
	if len(args) != 3 {
		return types.NewErr("session.count(kinds, window): bad arguments")
	}
	kinds, ok1 := args[1].(types.String)
	window, ok2 := args[2].(types.Duration)
	if !ok1 || !ok2 {
		return types.NewErr("session.count(kinds, window): bad arguments")
	}
	n, err := a.c.opts.history.SessionCount(a.ctx, a.sessionScope(args[0]), string(kinds), time.Duration(window.Duration))
	if err != nil {
		return a.historyErr(err)
	}
	return types.Int(n)
}

func (a *activation) sessionSeen(_ string, args ...ref.Val) ref.Val {
	if len(args) != 3 {
		return types.NewErr("session.seen(kinds, pattern): bad arguments")
	}
	kinds, ok1 := args[1].(types.String)
	pattern, ok2 := args[2].(types.String)
	if !ok1 || !ok2 {
		return types.NewErr("session.seen(kinds, pattern): bad arguments")
	}
	ok, err := a.c.opts.history.SessionSeen(a.ctx, a.sessionScope(args[0]), string(kinds), string(pattern))
	if err != nil {
		return a.historyErr(err)
	}
	return types.Bool(ok)
}

// run evaluates e in a: without cost tracking when a's inputs are within
// the estimate's bounds.
func (e *expr) run(a *activation) (ref.Val, error) {
	p := e.prg
	if a.fast {
		p = e.fast
	}
	v, _, err := p.ContextEval(a.ctx, a)
	return v, err
}

// inBounds reports whether what in holds is within the sizes the cost
// estimates assume (sizes): then each expression's cost is bounded by its
// estimate, which Compile held under the limit.
func inBounds(in *Input) bool {
	ev := in.Event
	if len(ev.Data) > maxStrSize || len(in.Identity) > maxStrSize || len(in.Harness) > maxStrSize ||
		len(ev.Source) > maxStrSize || len(ev.Subject) > maxStrSize || len(ev.ID) > maxStrSize ||
		len(ev.AgentID) > maxStrSize || len(ev.SessionID) > maxStrSize || len(ev.RunID) > maxStrSize {
		return false
	}
	if c := in.Call; c != nil && c.Action != nil {
		x := c.Action
		if len(x.Command) > maxStrSize || len(x.URL) > maxStrSize || len(x.Query) > maxStrSize ||
			len(x.Server) > maxStrSize || len(x.MCPTool) > maxStrSize || len(x.Paths) > maxListSize {
			return false
		}
		for _, p := range x.Paths {
			if len(p) > maxPathSize {
				return false
			}
		}
	}
	return true
}

// valueInBounds reports whether a variable's value is within the sizes
// the estimates of the expressions reading it assumed.
func valueInBounds(v ref.Val) bool {
	switch x := v.(type) {
	case types.String:
		return len(x) <= maxStrSize
	case types.Bytes:
		return len(x) <= maxStrSize
	case traits.Sizer:
		n, ok := x.Size().(types.Int)
		return ok && n <= maxValueSize
	}
	return true
}
