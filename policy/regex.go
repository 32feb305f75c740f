package policy

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
)

// matchesConstant plans s.matches("constant") (and matches(s,
// "constant")) with the expression compiled once, when the policy is, and
// matched without allocating: the rules people write are mostly regular
// expressions over a command or a path. A bad expression is an error of
// the program, so Compile refuses it.
func matchesConstant() cel.ProgramOption {
	factory := func(call interpreter.InterpretableCall, pattern string) (interpreter.InterpretableCall, error) {
		re, err := regexp.Compile(pattern)
		if err != nil {
			return nil, err
		}
		return &regexMatch{call: call, arg: call.Args()[0], pattern: types.String(pattern), re: re, prefix: anchoredPrefix(pattern)}, nil
	}
	return cel.OptimizeRegex(
		&interpreter.RegexOptimization{Function: overloads.Matches, OverloadID: overloads.MatchesString, RegexIndex: 1, Factory: factory},
		&interpreter.RegexOptimization{Function: overloads.Matches, OverloadID: overloads.Matches, RegexIndex: 1, Factory: factory},
	)
}

// regexMatch is a planned matches call with a constant expression.
type regexMatch struct {
	call    interpreter.InterpretableCall // what it replaces: its id, name, overload, args
	arg     interpreter.InterpretableV2   // the string matched
	pattern types.String
	re      *regexp.Regexp
	// prefix is the text a string must start with to match ("rm" of
	// "^rm\s"), or "": most strings are refused without running re.
	prefix string
}

func (m *regexMatch) ID() int64                           { return m.call.ID() }
func (m *regexMatch) Function() string                    { return m.call.Function() }
func (m *regexMatch) OverloadID() string                  { return m.call.OverloadID() }
func (m *regexMatch) Args() []interpreter.InterpretableV2 { return m.call.Args() }

// Eval implements interpreter.Interpretable.
func (m *regexMatch) Eval(act interpreter.Activation) ref.Val {
	return m.match(m.arg.Eval(act), nil)
}

// Exec implements interpreter.InterpretableV2, counting the call's cost as
// the standard matches does where costs are tracked.
func (m *regexMatch) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	return m.match(m.arg.Exec(frame), frame)
}

func (m *regexMatch) match(v ref.Val, frame *interpreter.ExecutionFrame) ref.Val {
	s, ok := v.(types.String)
	if !ok {
		if types.IsUnknownOrError(v) {
			return v
		}
		return types.NewErrWithNodeID(m.ID(), "no such overload: matches(%s)", v.Type().TypeName())
	}
	res := types.False
	if strings.HasPrefix(string(s), m.prefix) && m.re.MatchString(string(s)) {
		res = types.True
	}
	if costs := frame.CostTracker(); costs != nil {
		costs.EvalBinary(frame, m.ID(), m, v, m.pattern, res)
	}
	return res
}

// anchoredPrefix is the literal text every match of pattern starts with
// when it matches only at the start of the text ("rm -rf" of "^rm -rf\b"),
// else "". A literal with U+FFFD is left out: the expression matches it
// on any byte that is not UTF-8.
func anchoredPrefix(pattern string) string {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return ""
	}
	re = re.Simplify()
	if re.Op != syntax.OpConcat || len(re.Sub) < 2 || re.Sub[0].Op != syntax.OpBeginText {
		return ""
	}
	lit := re.Sub[1]
	if lit.Op != syntax.OpLiteral || lit.Flags&syntax.FoldCase != 0 {
		return ""
	}
	prefix := string(lit.Rune)
	if strings.ContainsRune(prefix, utf8.RuneError) {
		return ""
	}
	return prefix
}
