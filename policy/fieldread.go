package policy

import (
	"slices"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
)

// directFields plans a field of event or action (action.command,
// event.stage) as a read of the object's value, instead of CEL's
// attribute resolution: the objects hold their fields as values already.
// A name that resolves to anything else at run time (a comprehension's
// variable of the same name) is read the usual way; so is an optional
// field (action.?command). The programs with cost tracking (what the
// fast paths are held to) do not use it.
func directFields() cel.ProgramOption {
	return cel.CustomDecoratorV2(func(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
		ia, ok := i.(interpreter.InterpretableAttribute)
		if !ok {
			return i, nil
		}
		na, ok := ia.Attr().(interpreter.NamespacedAttribute)
		if !ok {
			return i, nil
		}
		names, quals := na.CandidateVariableNames(), na.Qualifiers()
		if len(names) != 1 || len(quals) != 1 {
			return i, nil
		}
		var def *objDef
		switch names[0] {
		case varEvent:
			def = eventDef
		case varAction:
			def = actionDef
		default:
			return i, nil
		}
		q, ok := quals[0].(interpreter.ConstantQualifier)
		if !ok || q.IsOptional() {
			return i, nil
		}
		field, ok := q.Value().(types.String)
		if !ok {
			return i, nil
		}
		if n := slices.Index(def.names, string(field)); n >= 0 {
			return &fieldRead{InterpretableV2: i, name: names[0], def: def, field: n}, nil
		}
		return i, nil
	})
}

// fieldRead reads field of the object named name.
type fieldRead struct {
	interpreter.InterpretableV2 // the attribute it replaces, for any other value
	name                        string
	def                         *objDef
	field                       int
}

// Exec implements interpreter.InterpretableV2.
func (r *fieldRead) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	if v, ok := frame.ResolveName(r.name); ok {
		if o, ok := v.(*object); ok && o.def == r.def {
			return o.vals[r.field]
		}
	}
	return r.InterpretableV2.Exec(frame)
}

// Eval implements interpreter.Interpretable.
func (r *fieldRead) Eval(act interpreter.Activation) ref.Val {
	if v, ok := act.ResolveName(r.name); ok {
		if o, ok := v.(*object); ok && o.def == r.def {
			return o.vals[r.field]
		}
	}
	return r.InterpretableV2.Eval(act)
}
