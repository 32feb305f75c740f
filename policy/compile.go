package policy

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"

	"github.com/hookbus/hookbus/events"
)

// Compiled is a policy checked and ready to evaluate. It is safe for
// concurrent use.
type Compiled struct {
	p    *Policy
	opts options

	conds       []*expr
	vars        []*expr
	varIndex    map[string]int // "variables.NAME" -> index in vars
	counters    []*counter
	counterIdx  map[string]int // "counters.NAME" -> index in counters
	validations []*validation
	mutations   []*expr
	// all is every validation as one list, the fast path of a decision
	// where all hold (nil for fewer than two); allFast the same without
	// cost tracking.
	all, allFast cel.Program

	agents, harnesses, kinds, tools globs
	stages                          []events.Stage
	history                         bool // some expression reads the history
	adapter                         types.Adapter
}

// expr is one compiled expression.
type expr struct {
	rule string // the rule's name (or the variable's, the counter's)
	path string // where it is in the document ("validations.0.expression")
	text string
	prg  cel.Program // with the run-time cost limit
	// fast is the same without cost tracking, for inputs within the sizes
	// the estimate assumed (inBounds): its estimate, under the limit,
	// bounds its cost.
	fast cel.Program
	// reads are the fields and variables it reads, each a program
	// rendering its value for explain.
	reads []read
}

type read struct {
	name string
	prg  cel.Program
	// root and field, when the read is a variable ("agent",
	// "variables.cmd") or a field of an object ("action.command"): the
	// value is taken from the activation as the program would read it.
	root  string
	field int // the object's field, or -1 for the variable itself
}

// directRead is how a read of name takes its value from the activation
// without running a program: ok is false for a read that needs one
// (a key of a map: call.arguments.command, payload.usage).
func directRead(name string) (root string, field int, ok bool) {
	if rootName(name) {
		return name, -1, true
	}
	root, f, _ := strings.Cut(name, ".")
	var def *objDef
	switch root {
	case varEvent:
		def = eventDef
	case varCall:
		def = callDef
	case varAction:
		def = actionDef
	default:
		return "", 0, false
	}
	if i := slices.Index(def.names, f); i >= 0 {
		return root, i, true
	}
	return "", 0, false
}

type validation struct {
	*expr
	v       *Validation
	message *expr // messageExpression, or nil
}

type counter struct {
	c          *Counter
	key, value *expr
}

// Compile type-checks every expression of p in the policy's environment
// (docs/POLICIES.md lists the variables and functions), refuses one whose
// estimated cost exceeds the limit, and prepares them to run. Errors wrap
// ErrInvalid (and ErrNoHistory, ErrCostLimit) and start
// "file:line:column:" at the expression's place in the file. p comes from
// Parse, which checked its other fields and applied the defaults.
func Compile(p *Policy, opts ...Option) (*Compiled, error) {
	c := &Compiled{p: p, opts: options{costLimit: DefaultCostLimit},
		varIndex: map[string]int{}, counterIdx: map[string]int{}}
	for _, o := range opts {
		if err := o(&c.opts); err != nil {
			return nil, err
		}
	}
	s := &p.Spec
	m := s.Match
	c.agents, c.harnesses, c.kinds, c.tools = compileGlobs(m.Agents), compileGlobs(m.Harnesses), compileGlobs(m.Kinds), compileGlobs(m.Tools)
	c.stages = m.Stages
	if len(c.stages) == 0 {
		c.stages = []events.Stage{events.StageToolBefore}
	}

	env, err := sharedEnv()
	if err != nil {
		return nil, fmt.Errorf("policy: environment: %w", err)
	}
	c.adapter = env.CELTypeAdapter()
	for i, v := range s.Variables {
		e, out, err := c.compile(env, v.Name, fmt.Sprintf("variables.%d.expression", i), v.Expression, nil)
		if err != nil {
			return nil, err
		}
		c.varIndex[prefixVar+v.Name] = len(c.vars)
		c.vars = append(c.vars, e)
		if env, err = env.Extend(cel.Variable(prefixVar+v.Name, out)); err != nil {
			return nil, p.errAt(fmt.Sprintf("variables.%d", i), "%v", err)
		}
	}
	for i := range s.Counters {
		cn := &s.Counters[i]
		if env, err = env.Extend(cel.Variable(prefixCount+cn.Name, cel.DoubleType)); err != nil {
			return nil, p.errAt(fmt.Sprintf("counters.%d", i), "%v", err)
		}
	}
	if len(s.Counters) > 0 {
		c.history = true
		if c.opts.history == nil {
			return nil, fmt.Errorf("%w (%w)", p.errAt("counters", "counters are kept in the record: compile with a history (WithHistory)"), ErrNoHistory)
		}
	}
	for i := range s.Counters {
		cn := &s.Counters[i]
		at := fmt.Sprintf("counters.%d.", i)
		key, _, err := c.compile(env, cn.Name, at+"key", cn.Key, cel.StringType)
		if err != nil {
			return nil, err
		}
		value, _, err := c.compile(env, cn.Name, at+"value", cn.Value, numberType)
		if err != nil {
			return nil, err
		}
		c.counterIdx[prefixCount+cn.Name] = len(c.counters)
		c.counters = append(c.counters, &counter{c: cn, key: key, value: value})
	}
	for i, mc := range s.MatchConditions {
		e, _, err := c.compile(env, mc.Name, fmt.Sprintf("matchConditions.%d.expression", i), mc.Expression, cel.BoolType)
		if err != nil {
			return nil, err
		}
		c.conds = append(c.conds, e)
	}
	for i := range s.Validations {
		v := &s.Validations[i]
		at := fmt.Sprintf("validations.%d.", i)
		e, _, err := c.compile(env, v.Name, at+"expression", v.Expression, cel.BoolType)
		if err != nil {
			return nil, err
		}
		val := &validation{expr: e, v: v}
		if v.MessageExpression != "" {
			if val.message, _, err = c.compile(env, v.Name, at+"messageExpression", v.MessageExpression, cel.StringType); err != nil {
				return nil, err
			}
		}
		c.validations = append(c.validations, val)
	}
	if len(c.validations) > 1 {
		if c.all, c.allFast, err = c.compileAll(env); err != nil {
			return nil, err
		}
	}
	for i, mu := range s.Mutations {
		e, _, err := c.compile(env, mu.Name, fmt.Sprintf("mutations.%d.expression", i), mu.Expression, patchType)
		if err != nil {
			return nil, err
		}
		c.mutations = append(c.mutations, e)
	}
	return c, nil
}

// compileAll compiles the validations as one conjunction: evaluating it
// costs one program run instead of one per rule, and it is true exactly
// when every validation is (CEL's && is false or an error otherwise).
// Each validation has been checked on its own; the conjunction is not
// estimated again, and its run is bounded by the sum of the validations'
// limits.
func (c *Compiled) compileAll(env *cel.Env) (tracked, fast cel.Program, err error) {
	var b strings.Builder
	for i, v := range c.validations {
		if i > 0 {
			b.WriteString(" && ")
		}
		b.WriteString("(\n")
		b.WriteString(v.text)
		b.WriteString("\n)")
	}
	ast, iss := env.Compile(b.String())
	if iss.Err() != nil {
		return nil, nil, c.p.errAt("validations", "the validations together: %v", iss.Err())
	}
	if tracked, fast, err = programs(env, ast, c.opts.costLimit*uint64(len(c.validations))); err != nil {
		return nil, nil, c.p.errAt("validations", "%v", err)
	}
	return tracked, fast, nil
}

// programs plans a checked expression twice: with the run-time cost limit,
// and without cost tracking, reading the objects' fields directly (for
// inputs within the sizes the estimate assumed: inBounds).
func programs(env *cel.Env, ast *cel.Ast, limit uint64) (tracked, fast cel.Program, err error) {
	if tracked, err = env.Program(ast, cel.EvalOptions(cel.OptOptimize), matchesConstant(), cel.CostLimit(limit), cel.InterruptCheckFrequency(128)); err != nil {
		return nil, nil, err
	}
	fast, err = env.Program(ast, cel.EvalOptions(cel.OptOptimize), matchesConstant(), directFields(), cel.InterruptCheckFrequency(128))
	return tracked, fast, err
}

// Marker types for compile's output check.
var (
	numberType = cel.DoubleType // int, uint and double are accepted
	patchType  = cel.ListType(cel.DynType)
)

// compile checks one expression and plans it. want is the output type it
// must have (nil: any; dyn always passes, checked when it runs).
func (c *Compiled) compile(env *cel.Env, rule, path, text string, want *cel.Type) (*expr, *cel.Type, error) {
	ast, iss := env.Compile(text)
	if iss.Err() != nil {
		return nil, nil, c.celErrors(path, rule, iss)
	}
	out := ast.OutputType()
	if want != nil && !outputOK(out, want) {
		return nil, nil, c.errIn(path, rule, 0, 0, "the expression is %s; it must be %s", typeName(out), wantName(want))
	}
	native := ast.NativeRep()
	if err := c.checkHistory(native, path, rule); err != nil {
		return nil, nil, err
	}
	est, err := env.EstimateCost(ast, sizes{})
	if err != nil {
		return nil, nil, c.errIn(path, rule, 0, 0, "cannot estimate the cost: %v", err)
	}
	if est.Max > c.opts.costLimit {
		return nil, nil, fmt.Errorf("%w (%w)", c.errIn(path, rule, 0, 0, "estimated cost %d exceeds the limit %d (bound a comprehension, or match fewer values with a cheaper test)",
			est.Max, c.opts.costLimit), ErrCostLimit)
	}
	prg, fast, err := programs(env, ast, c.opts.costLimit)
	if err != nil {
		return nil, nil, c.errIn(path, rule, 0, 0, "%v", err)
	}
	e := &expr{rule: rule, path: path, text: text, prg: prg, fast: fast}
	for _, name := range readsOf(native) {
		rast, iss := env.Compile(name)
		if iss.Err() != nil {
			continue
		}
		rprg, err := env.Program(rast, cel.CostLimit(c.opts.costLimit))
		if err != nil {
			continue
		}
		r := read{name: name, prg: rprg, field: -1}
		if root, field, ok := directRead(name); ok {
			r.root, r.field = root, field
		}
		e.reads = append(e.reads, r)
	}
	return e, out, nil
}

func outputOK(out, want *cel.Type) bool {
	if out.Kind() == types.DynKind {
		return true
	}
	switch want {
	case numberType:
		k := out.Kind()
		return k == types.IntKind || k == types.UintKind || k == types.DoubleKind
	case patchType:
		return out.Kind() == types.ListKind
	}
	return out.IsExactType(want)
}

func wantName(t *cel.Type) string {
	switch t {
	case numberType:
		return "a number"
	case patchType:
		return `a list of JSON Patch operations ([{"op": "replace", "path": "/call/arguments/command", "value": ...}])`
	}
	return typeName(t)
}

func typeName(t *cel.Type) string {
	if t == nil {
		return "untyped"
	}
	return "of type " + t.String()
}

// celErrors is CEL's issues placed in the file.
func (c *Compiled) celErrors(path, rule string, iss *cel.Issues) error {
	var msgs []string
	for _, e := range iss.Errors() {
		line, col := 0, 0
		if e.Location != nil {
			line, col = e.Location.Line(), e.Location.Column()
		}
		msgs = append(msgs, c.errIn(path, rule, line, col, "%s", e.Message).Error())
	}
	if len(msgs) == 0 {
		return c.errIn(path, rule, 0, 0, "%v", iss.Err())
	}
	// One error, its message the first; the others follow on their lines.
	first := strings.TrimPrefix(msgs[0], ErrInvalid.Error()+": ")
	for _, m := range msgs[1:] {
		first += "\n" + strings.TrimPrefix(m, ErrInvalid.Error()+": ")
	}
	return fmt.Errorf("%w: %s", ErrInvalid, first)
}

// errIn is an ErrInvalid error at CEL's location (line 1-based, column
// 0-based; 0, 0 for the expression's start) within the expression at path.
func (c *Compiled) errIn(path, rule string, line, col int, format string, args ...any) error {
	p := c.p
	ps := p.posOf(path)
	l, cl := ps.at(line, col)
	// What an entry of the path's section is: "validations.2.expression"
	// is a validation's.
	what := strings.TrimSuffix(strings.SplitN(path, ".", 2)[0], "s")
	msg := fmt.Sprintf(format, args...)
	return fmt.Errorf("%w: %s:%d:%d: policy %s: %s %s: %s", ErrInvalid, p.file, l, cl, p.Name, what, rule, msg)
}

// checkHistory notes whether the expression reads the history, and
// refuses count and seen on anything but session.
func (c *Compiled) checkHistory(a *celast.AST, path, rule string) error {
	var err error
	celast.PreOrderVisit(a.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		switch e.Kind() {
		case celast.CallKind:
			call := e.AsCall()
			if (call.FunctionName() == fnCount || call.FunctionName() == fnSeen) && call.IsMemberFunction() {
				c.history = true
				loc := a.SourceInfo().GetStartLocation(e.ID())
				switch t := call.Target(); {
				case err != nil:
				case t.Kind() != celast.IdentKind || t.AsIdent() != varSession:
					err = c.errIn(path, rule, loc.Line(), loc.Column(), "%s is a function of the session: write session.%s(...)", call.FunctionName(), call.FunctionName())
				case c.opts.history == nil:
					err = fmt.Errorf("%w (%w)", c.errIn(path, rule, loc.Line(), loc.Column(), "session.%s reads the record: compile with a history (WithHistory)", call.FunctionName()), ErrNoHistory)
				default:
					err = c.checkHistoryArgs(a, path, rule, call)
				}
			}
		case celast.IdentKind:
			if strings.HasPrefix(e.AsIdent(), prefixCount) {
				c.history = true
			}
		case celast.SelectKind:
			if op := e.AsSelect().Operand(); op.Kind() == celast.IdentKind && op.AsIdent()+"." == prefixCount {
				c.history = true
			}
		}
	}))
	return err
}

// checkHistoryArgs refuses a constant kinds or pattern argument of
// session.count or session.seen that the history would refuse.
func (c *Compiled) checkHistoryArgs(a *celast.AST, path, rule string, call celast.CallExpr) error {
	args := call.Args()
	constant := func(i int) (string, int, int, bool) {
		if i >= len(args) || args[i].Kind() != celast.LiteralKind {
			return "", 0, 0, false
		}
		s, ok := args[i].AsLiteral().(types.String)
		loc := a.SourceInfo().GetStartLocation(args[i].ID())
		return string(s), loc.Line(), loc.Column(), ok
	}
	if kinds, line, col, ok := constant(0); ok {
		if _, err := kindsGlob(kinds); err != nil {
			return c.errIn(path, rule, line, col, "session.%s: %v (kinds or globs of kinds separated by |: %s)", call.FunctionName(), err, kindList())
		}
		for _, k := range strings.Split(kinds, "|") {
			if !kindGlobMatchesAny(k) {
				return c.errIn(path, rule, line, col, "session.%s: %q matches no action kind (%s)", call.FunctionName(), k, kindList())
			}
		}
	}
	if call.FunctionName() == fnSeen {
		if pattern, line, col, ok := constant(1); ok {
			if _, err := regexp.Compile(pattern); err != nil {
				return c.errIn(path, rule, line, col, "session.seen: %v", err)
			}
		}
	}
	return nil
}

// readsOf lists the fields and variables an expression reads, as CEL
// text ("action.command", "variables.cmd", "agent"), the longest select
// chains only.
func readsOf(a *celast.AST) []string {
	refs := a.ReferenceMap()
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	var chain func(e celast.Expr) string
	chain = func(e celast.Expr) string {
		switch e.Kind() {
		case celast.IdentKind:
			if r, ok := refs[e.ID()]; ok && len(r.OverloadIDs) == 0 && rootName(r.Name) {
				return r.Name
			}
		case celast.SelectKind:
			if r, ok := refs[e.ID()]; ok && len(r.OverloadIDs) == 0 && rootName(r.Name) {
				return r.Name // a qualified name: variables.cmd
			}
			s := e.AsSelect()
			if s.IsTestOnly() {
				return ""
			}
			if base := chain(s.Operand()); base != "" {
				return base + "." + s.FieldName()
			}
		}
		return ""
	}
	celast.PreOrderVisit(a.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if name := chain(e); name != "" {
			add(name)
		}
	}))
	// Keep the longest chains: drop "action" when "action.command" is read.
	return slices.DeleteFunc(slices.Clone(out), func(s string) bool {
		return slices.ContainsFunc(out, func(o string) bool { return strings.HasPrefix(o, s+".") })
	})
}

func rootName(n string) bool {
	switch n {
	case varEvent, varCall, varAction, varPayload, varAgent, varSession, varRun, varHarness, varIdentity:
		return true
	}
	return strings.HasPrefix(n, prefixVar) || strings.HasPrefix(n, prefixCount)
}

// Policy returns the policy c was compiled from.
func (c *Compiled) Policy() *Policy { return c.p }
